#include "xsp/record/ceilings.h"

namespace xsp {

const Ceiling* MachineCeilings::find(const std::string& name) const {
  for (const auto& c : ceilings)
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace xsp
