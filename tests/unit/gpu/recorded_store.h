// GPU fixtures recorded as XSP stores (tests/fixtures/gpu/*.db): loading an evaluation without touching the fixture.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "xsp/store/store.h"

namespace xsp::testing {

/// Evaluation `id` of the store `fixture`. Opening a store migrates it to this build's schema, so the fixture is
/// copied to a temporary folder first and the copy is opened. Throws std::runtime_error when there is no such id.
inline EvaluationRecord recorded_evaluation(const std::filesystem::path& fixture, std::int64_t id) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("xsp-gpu-" + fixture.stem().string() + "-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(fixture, dir / "x.db", fs::copy_options::overwrite_existing);
  auto record = Store::open(dir / "x.db")->load(id);
  fs::remove_all(dir);
  if (!record) throw std::runtime_error(fixture.string() + " has no evaluation " + std::to_string(id));
  return *record;
}

}  // namespace xsp::testing
