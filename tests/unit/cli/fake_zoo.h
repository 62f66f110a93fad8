// A one-model zoo for the CLI tests: the model runs on a fake framework registered by the test.
#pragma once
#include <filesystem>
#include <fstream>
#include <string>

#include "xsp/manifest/manifest.h"

namespace xsp::testing {

/// Creates `zoo` with a weights file fake.bin and the manifest NAME.yaml of model `name` 1.0.0 on framework
/// `framework` (>=1.0): one float32 tensor of 4 values in, a classification out, fake.bin's real sha256.
inline void write_fake_zoo(const std::filesystem::path& zoo, const std::string& name, const std::string& framework) {
  std::filesystem::create_directories(zoo);
  { std::ofstream(zoo / "fake.bin") << "weights"; }
  std::ofstream(zoo / (name + ".yaml")) << "name: " << name
                                        << "\nversion: 1.0.0\ndescription: a model of the fake framework\n"
                                        << "framework:\n  name: " << framework << "\n  version: \">=1.0\"\n"
                                        << "model:\n  graph_path: fake.bin\n  checksum: sha256:"
                                        << sha256_file(zoo / "fake.bin") << "\n"
                                        << "inputs:\n  - type: tensor\n    element_type: float32\n    dimensions: [4]\n"
                                        << "outputs:\n  - type: classification\n";
}

}  // namespace xsp::testing
