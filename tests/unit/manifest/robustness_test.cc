// Issue 12, "bad input never crashes, loses or lies", for manifests and the zoo: over-long fields are refused
// (no stack overflow in a regex), numbers are range-checked (never wrapped), version numbers that would overflow are
// errors, and one bad file of a zoo is a reported problem rather than the end of the whole zoo.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../store/temp_dir.h"
#include "hostile_files.h"
#include "xsp/manifest/manifest.h"
#include "xsp/manifest/semver.h"

namespace fs = std::filesystem;
using xsp::ManifestError;

namespace {

const fs::path kValid = fs::path(XSP_TEST_FIXTURES) / "manifests" / "valid.yaml";

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << "fixture has no '" << from << "'";
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

// The valid fixture with `from` replaced by `to`, parsed expecting a ManifestError; returns it.
ManifestError error_with(const std::string& from, const std::string& to) {
  const std::string text = replace(read(kValid), from, to);
  try {
    xsp::parse_manifest(text, "m.yaml");
  } catch (const ManifestError& e) {
    return e;
  }
  ADD_FAILURE() << "manifest parsed although it should not, with '" << to.substr(0, 100) << "'";
  return ManifestError("", 0, "", "");
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

using xsp::testing::TempDir;  // a fresh folder per test (../store/temp_dir.h)

// A valid manifest text of model `name` `version` (the fixture, renamed).
std::string manifest(const std::string& name, const std::string& version) {
  return replace(replace(read(kValid), "name: TestNet", "name: " + name), "version: 1.2.3", "version: " + version);
}

}  // namespace

TEST(ManifestRobustness, LongVersionIsRefusedNamingFieldAndLimitWithoutCrashing) {
  // Used to overflow the stack: std::regex_match recursed once per character of the version.
  const std::string version = "1.0.0-" + std::string(50000, 'a');
  const ManifestError e = error_with("version: 1.2.3", "version: \"" + version + "\"");
  EXPECT_EQ(e.file(), "m.yaml");
  EXPECT_EQ(e.field(), "version");
  const std::string w = e.what();
  EXPECT_TRUE(has(w, "at most 256 characters")) << w.substr(0, 300);
  EXPECT_TRUE(has(w, std::to_string(version.size()))) << w.substr(0, 300);  // the length it has
  EXPECT_LT(w.size(), 400u) << "the value should be shown cut short";
}

TEST(ManifestRobustness, VersionsAreCheckedWithoutRegexAndAsStrictlyAsBefore) {
  for (const char* ok :
       {"0.0.0", "1.2.3", "10.20.30", "1.0.0-rc.1", "1.0.0-rc.1+build.5", "1.0.0+cu130", "999999999.0.0"}) {
    SCOPED_TRACE(ok);
    EXPECT_EQ(xsp::parse_manifest(manifest("T", std::string("\"") + ok + "\""), "m.yaml").version, ok);
  }
  // Within the length limit, a long prerelease is still a version (and checking it must not recurse).
  const std::string long_ok = "1.0.0-" + std::string(250, 'a');
  EXPECT_EQ(xsp::parse_manifest(manifest("T", long_ok), "m.yaml").version, long_ok);
  for (const char* bad :
       {"1.0", "01.0.0", "1.02.0", "1.0.0-", "1.0.0+", "1.0.0 beta", "v1.0.0", "1.0.0-r_c", "a.b.c", "1..0"}) {
    SCOPED_TRACE(bad);
    const ManifestError e = error_with("version: 1.2.3", std::string("version: \"") + bad + "\"");
    EXPECT_EQ(e.field(), "version");
    EXPECT_TRUE(has(e.what(), std::string("'") + bad + "'")) << e.what();
  }
}

TEST(ManifestRobustness, VersionNumberTooLargeIsAClearError) {
  const ManifestError e = error_with("version: 1.2.3", "version: 12345678901.0.0");
  EXPECT_EQ(e.field(), "version");
  const std::string w = e.what();
  EXPECT_TRUE(has(w, "m.yaml")) << w;
  EXPECT_TRUE(has(w, "12345678901")) << w;
  EXPECT_TRUE(has(w, "too large")) << w;
  EXPECT_TRUE(has(w, std::to_string(xsp::kMaxVersionNumber))) << w;
  EXPECT_EQ(error_with("version: 1.2.3", "version: 1.0.99999999999").field(), "version");
}

TEST(ManifestRobustness, ParseSemverRefusesNumbersThatDoNotFit) {
  // A component cut short used to leave its remaining digits as the prerelease: 1.99999999999 read as 1.0.0-"99".
  EXPECT_FALSE(xsp::parse_semver("1.99999999999").has_value());
  EXPECT_FALSE(xsp::parse_semver("1.0.99999999999").has_value());
  EXPECT_FALSE(xsp::parse_semver("99999999999").has_value());
  const auto max = xsp::parse_semver("999999999.999999999.999999999");
  ASSERT_TRUE(max.has_value());
  EXPECT_EQ(max->major, xsp::kMaxVersionNumber);
  EXPECT_EQ(max->patch, xsp::kMaxVersionNumber);
  EXPECT_THROW(xsp::satisfies("1.0.0", ">=1.99999999999"), std::invalid_argument);
}

TEST(ManifestRobustness, TwoManifestsWithHugeMajorVersionsAreProblemsNotACrash) {
  // Used to dereference an empty std::optional while sorting the zoo by version.
  TempDir dir;
  std::ofstream(dir.path() / "a.yaml") << manifest("Same", "12345678901.0.0");
  std::ofstream(dir.path() / "b.yaml") << manifest("Same", "12345678902.0.0");
  try {
    xsp::load_zoo(dir.path());
    ADD_FAILURE() << "a zoo with versions that overflow loaded";
  } catch (const ManifestError& e) {
    EXPECT_EQ(e.file(), (dir.path() / "a.yaml").string());
    EXPECT_EQ(e.field(), "version");
    EXPECT_TRUE(has(e.what(), "too large")) << e.what();
  }
  const xsp::Zoo zoo = xsp::scan_zoo(dir.path());
  EXPECT_TRUE(zoo.models.empty());
  ASSERT_EQ(zoo.problems.size(), 2u);
  for (const auto& p : zoo.problems) {
    EXPECT_TRUE(has(p.message, p.file.string())) << p.message;
    EXPECT_TRUE(has(p.message, "field 'version'")) << p.message;
    EXPECT_EQ(p.name, "Same");
  }
}

TEST(ManifestRobustness, OverlongStringFieldsAreRefusedNamingFieldAndLimit) {
  struct Case {
    std::string from, to, field, limit;
  };
  const std::string path(5000, 'p');
  const std::vector<Case> cases = {
      {"name: TestNet", "name: " + std::string(300, 'n'), "name", "256"},
      {"description: a manifest for the unit tests", "description: " + std::string(70000, 'd'), "description", "65536"},
      {"graph_path: small.bin", "graph_path: " + path, "model.graph_path", "4096"},
      {"labels: labels.txt", "labels: " + path, "outputs[0].labels", "4096"},
      {"version: \">=1.13, <3\"", "version: \">=1.13" + std::string(300, ' ') + "\"", "framework.version", "256"},
      {"training_dataset: none", "training_dataset: " + std::string(70000, 't'), "attributes.training_dataset",
       "65536"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.field);
    const ManifestError e = error_with(c.from, c.to);
    EXPECT_EQ(e.field(), c.field);
    EXPECT_TRUE(has(e.what(), "at most " + c.limit + " characters")) << std::string(e.what()).substr(0, 300);
    EXPECT_LT(std::string(e.what()).size(), 600u);
  }
}

TEST(ManifestRobustness, ChecksumIsCheckedByLengthAndDigits) {
  const std::string good = "0b5c28c9832c01e51d52c7c7e33ddda0a2c4c69474b3a08a9a1ad6319a51cdea";
  for (const std::string& bad : {"sha256:" + good + "0", "sha256:" + good.substr(1), "sha256:" + std::string(64, 'A'),
                                 "md5:" + good.substr(0, 32), std::string(200, 'x')}) {
    SCOPED_TRACE(bad);
    const ManifestError e = error_with("checksum: sha256:" + good, "checksum: " + bad);
    EXPECT_EQ(e.field(), "model.checksum");
    EXPECT_TRUE(has(e.what(), "64 lower-case hex digits")) << e.what();
  }
}

TEST(ManifestRobustness, SizesAreRangeCheckedNeverWrapped) {
  struct Case {
    std::string from, to, field, value, range;
  };
  const std::vector<Case> cases = {
      // 4294967520 = 2^32 + 224: static_cast<int> made it 224 and the model ran as if nothing was wrong.
      {"center_crop: {size: 224}", "center_crop: {size: 4294967520}", "inputs[0].steps[2].center_crop.size",
       "4294967520", "from 1 to 16384"},
      {"center_crop: {size: 224}", "center_crop: {size: 0}", "inputs[0].steps[2].center_crop.size", "'0'",
       "from 1 to 16384"},
      {"shorter_side: 256", "shorter_side: 99999999999999999999", "inputs[0].steps[1].resize.shorter_side",
       "99999999999999999999", "from 1 to 16384"},
      {"shorter_side: 256", "shorter_side: -256", "inputs[0].steps[1].resize.shorter_side", "-256", "from 1 to 16384"},
      {"top_k: {k: 5}", "top_k: {k: 1099511627776}", "outputs[0].steps[1].top_k.k", "1099511627776",
       "from 1 to 1000000"},
      {"dimensions: [3, 224, 224]", "dimensions: [3, 20000, 224]", "inputs[0].dimensions[1]", "20000",
       "from 1 to 16384"},
      {"dimensions: [3, 224, 224]", "dimensions: [3, 4294967520, 224]", "inputs[0].dimensions[1]", "4294967520",
       "from 1 to 2147483648"},
      {"scale: 255", "scale: 1e300", "inputs[0].steps[3].normalize.scale", "1e300", "at most 1000000000"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.to);
    const ManifestError e = error_with(c.from, c.to);
    EXPECT_EQ(e.field(), c.field);
    EXPECT_TRUE(has(e.what(), c.value)) << e.what();
    EXPECT_TRUE(has(e.what(), c.range)) << e.what();
    EXPECT_TRUE(has(e.what(), "m.yaml:")) << e.what();
  }
}

TEST(ManifestRobustness, TensorDimensionsAreBoundedUpFront) {
  auto tensor = [](const std::string& dims) {
    std::string t = replace(read(kValid), "    type: image", "    type: tensor");
    t = replace(t, "    color_mode: BGR\n", "");
    return replace(t, "dimensions: [3, 224, 224]", "dimensions: " + dims);
  };
  auto error = [](const std::string& text) {
    try {
      xsp::parse_manifest(text, "t.yaml");
    } catch (const ManifestError& e) {
      return e;
    }
    ADD_FAILURE() << "parsed";
    return ManifestError("", 0, "", "");
  };
  EXPECT_EQ(xsp::parse_manifest(tensor("[3, 1024, 1024]"), "t.yaml").inputs[0].dimensions,
            (std::vector<long>{3, 1024, 1024}));

  ManifestError e = error(tensor("[9223372036854775807]"));  // 2^63 - 1
  EXPECT_EQ(e.field(), "inputs[0].dimensions[0]");
  EXPECT_TRUE(has(e.what(), "9223372036854775807")) << e.what();
  EXPECT_TRUE(has(e.what(), "from 1 to 2147483648")) << e.what();

  e = error(tensor("[3, 100000, 100000]"));
  EXPECT_EQ(e.field(), "inputs[0].dimensions");
  EXPECT_TRUE(has(e.what(), "3x100000x100000")) << e.what();
  EXPECT_TRUE(has(e.what(), "at most 2147483648 elements per sample")) << e.what();

  e = error(tensor("[65536, 65536, 65536, 65536]"));  // a product that would overflow 64 bits
  EXPECT_EQ(e.field(), "inputs[0].dimensions");

  e = error(tensor("[1, 1, 1, 1, 1, 1, 1, 1, 1]"));
  EXPECT_EQ(e.field(), "inputs[0].dimensions");
  EXPECT_TRUE(has(e.what(), "at most 8 entries")) << e.what();
}

TEST(ManifestRobustness, ListsAreBounded) {
  std::string many = "[0.5";
  for (int i = 0; i < 2000; ++i) many += ", 0.5";
  many += "]";
  const ManifestError e = error_with("std: [0.229, 0.224, 0.225]", "std: " + many);
  EXPECT_EQ(e.field(), "inputs[0].steps[3].normalize.std");
  EXPECT_TRUE(has(e.what(), "at most 1024 entries, got 2001")) << e.what();
}

TEST(ManifestRobustness, HugeFileAndDeepNestingAreErrorsNotCrashes) {
  TempDir dir;
  const fs::path big = dir.path() / "big.yaml";
  std::ofstream(big) << read(kValid) << "# " << std::string(2 << 20, 'x') << "\n";
  try {
    xsp::load_manifest(big);
    ADD_FAILURE() << "a 2 MiB manifest loaded";
  } catch (const ManifestError& e) {
    EXPECT_EQ(e.file(), big.string());
    EXPECT_TRUE(has(e.what(), "at most 1048576 bytes")) << e.what();
  }
  const std::string deep = "name: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
  EXPECT_THROW(xsp::parse_manifest(deep, "deep.yaml"), ManifestError);
}

TEST(ZooRobustness, OneBadFileIsAProblemAndTheOthersStillLoad) {
  TempDir dir;
  std::ofstream(dir.path() / "good.yaml") << manifest("Good", "1.0.0");
  std::ofstream(dir.path() / "bad_step.yaml") << replace(manifest("BadStep", "1.0.0"), "- decode: {}", "- sharpen: {}");
  std::ofstream(dir.path() / "broken.yml") << "name: [unclosed\n";
  std::ofstream(dir.path() / "notes.txt") << "not a manifest: ignored";
  fs::create_symlink("loop.yaml", dir.path() / "loop.yaml");        // a link to itself
  fs::create_symlink("missing.bin", dir.path() / "dangling.yaml");  // a link to nothing
  fs::create_directories(dir.path() / "folder.yaml");

  const xsp::Zoo zoo = xsp::scan_zoo(dir.path());
  ASSERT_EQ(zoo.models.size(), 1u);
  EXPECT_EQ(zoo.models[0].name, "Good");
  std::vector<std::string> files;
  for (const auto& p : zoo.problems) {
    files.push_back(p.file.filename().string());
    EXPECT_TRUE(has(p.message, p.file.string())) << p.message;  // each message names its file
  }
  EXPECT_EQ(files,
            (std::vector<std::string>{"bad_step.yaml", "broken.yml", "dangling.yaml", "folder.yaml", "loop.yaml"}));
  auto message_of = [&](const std::string& f) {
    for (const auto& p : zoo.problems)
      if (p.file.filename() == f) return p.message;
    return std::string();
  };
  EXPECT_TRUE(has(message_of("bad_step.yaml"), "unknown pre-processing step 'sharpen'")) << message_of("bad_step.yaml");
  EXPECT_TRUE(has(message_of("broken.yml"), "malformed YAML")) << message_of("broken.yml");
  EXPECT_TRUE(has(message_of("loop.yaml"), "symbolic links")) << message_of("loop.yaml");
  EXPECT_TRUE(has(message_of("folder.yaml"), "not a regular file")) << message_of("folder.yaml");
  EXPECT_EQ(zoo.problems[0].name, "BadStep");  // claimed by its YAML, so that a lookup of BadStep can name the file

  // The strict form still refuses the zoo, with a ManifestError (not std::filesystem_error) naming the first file.
  try {
    xsp::load_zoo(dir.path());
    ADD_FAILURE() << "load_zoo accepted a bad zoo";
  } catch (const ManifestError& e) {
    EXPECT_EQ(e.file(), (dir.path() / "bad_step.yaml").string());
  }
}

TEST(ZooRobustness, SymlinkLoopAloneMakesLoadZooThrowAManifestError) {
  // std::filesystem used to throw its own error (ELOOP) out of the directory walk, naming no manifest field.
  TempDir dir;
  std::ofstream(dir.path() / "good.yaml") << manifest("Good", "1.0.0");
  fs::create_symlink("b.yaml", dir.path() / "a.yaml");
  fs::create_symlink("a.yaml", dir.path() / "b.yaml");
  try {
    xsp::load_zoo(dir.path());
    ADD_FAILURE() << "load_zoo accepted a symlink loop";
  } catch (const ManifestError& e) {
    EXPECT_EQ(e.file(), (dir.path() / "a.yaml").string());
    EXPECT_TRUE(has(e.what(), "symbolic links")) << e.what();
  }
  EXPECT_EQ(xsp::scan_zoo(dir.path()).models.size(), 1u);
}

TEST(ZooRobustness, FindModelFailsOnlyForTheBadModel) {
  TempDir dir;
  std::ofstream(dir.path() / "good.yaml") << manifest("Good", "1.0.0");
  std::ofstream(dir.path() / "resnet18.yaml") << "name: ResNet18\nversion: 1.0.0\ninputs: 3\n";
  std::ofstream(dir.path() / "other.yaml") << "{{{";
  // Same name and version as good.yaml: the first file by path is kept, the other is a problem.
  std::ofstream(dir.path() / "good_copy.yaml") << manifest("Good", "1.0.0");
  const xsp::Zoo zoo = xsp::scan_zoo(dir.path());
  ASSERT_EQ(zoo.models.size(), 1u);
  EXPECT_EQ(zoo.models[0].path, dir.path() / "good.yaml");
  ASSERT_EQ(zoo.problems.size(), 3u);
  EXPECT_EQ(zoo.problems[0].file, dir.path() / "good_copy.yaml");
  EXPECT_TRUE(has(zoo.problems[0].message, "also defined in " + (dir.path() / "good.yaml").string()))
      << zoo.problems[0].message;

  auto error_of = [&](const std::string& name) {
    try {
      xsp::find_model(zoo, name);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << name << " found";
    return std::string();
  };
  // By its claimed name and by its file name.
  for (const char* name : {"resnet18", "RESNET18"}) {
    const std::string w = error_of(name);
    EXPECT_TRUE(has(w, (dir.path() / "resnet18.yaml").string() + " is invalid")) << w;
    EXPECT_TRUE(has(w, "field 'framework': missing required field 'framework'")) << w;
  }
  EXPECT_TRUE(has(error_of("other"), (dir.path() / "other.yaml").string())) << error_of("other");
  // Two files claim Good 1.0.0: which one was meant cannot be known.
  EXPECT_TRUE(has(error_of("good"), "good_copy.yaml")) << error_of("good");
  // An unknown model: the known ones, and the files that could not be read.
  const std::string w = error_of("vgg16");
  EXPECT_TRUE(has(w, "unknown model 'vgg16'")) << w;
  EXPECT_TRUE(has(w, "3 manifest(s) of the zoo could not be read")) << w;
  EXPECT_TRUE(has(w, (dir.path() / "other.yaml").string())) << w;
}

TEST(ZooRobustness, AGoodModelIsFoundBesideBadFiles) {
  TempDir dir;
  std::ofstream(dir.path() / "a.yaml") << manifest("Alpha", "1.0.0");
  std::ofstream(dir.path() / "a2.yaml") << manifest("Alpha", "1.10.0");
  std::ofstream(dir.path() / "bad.yaml") << replace(manifest("Beta", "1.0.0"), "size: 224", "size: 4294967520");
  const xsp::Zoo zoo = xsp::scan_zoo(dir.path());
  EXPECT_EQ(xsp::find_model(zoo, "alpha").version, "1.10.0");
  EXPECT_EQ(xsp::find_model(zoo, "Alpha", "1.0.0").path, dir.path() / "a.yaml");
  ASSERT_EQ(zoo.problems.size(), 1u);
  EXPECT_TRUE(has(zoo.problems[0].message, "4294967520")) << zoo.problems[0].message;
}
