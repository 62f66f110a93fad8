// Issue 31, finding 5: files a manifest names that are not files to read (/dev/zero, a FIFO, a folder) are refused at
// once, naming the file and what it is, and file paths that cannot be paths (a name over NAME_MAX, over PATH_MAX
// resolved, a NUL byte) are refused when the manifest is parsed, so that a zoo lists such a manifest as a problem.
#include "hostile_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../store/temp_dir.h"
#include "xsp/manifest/files.h"
#include "xsp/manifest/manifest.h"

namespace fs = std::filesystem;
using namespace xsp;
using xsp::testing::Fifo;
using xsp::testing::has;
using xsp::testing::message_within;

namespace {

using xsp::testing::TempDir;  // a fresh folder per test (../store/temp_dir.h)

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << "fixture has no '" << from << "'";
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

const fs::path kFixtures = fs::path(XSP_TEST_FIXTURES) / "manifests";

// The fixture `name` with `from` replaced by `to`, parsed as if it were the file `as`; the ManifestError's what().
std::string manifest_error(const std::string& name, const std::string& from, const std::string& to,
                           const fs::path& as = "/zoo/m.yaml") {
  try {
    parse_manifest(replace(read(kFixtures / name), from, to), as);
  } catch (const ManifestError& e) {
    return e.what();
  }
  return "(parsed)";
}

}  // namespace

TEST(HostileFiles, Sha256RefusesDevZeroAFifoAndAFolderAtOnceNamingThem) {
  TempDir dir;
  Fifo fifo(dir.path() / "graph.pt");
  ASSERT_TRUE(fifo.ok());
  const std::string zero = message_within([] { sha256_file("/dev/zero"); });
  EXPECT_TRUE(has(zero, "/dev/zero is not a regular file (it is a character device)")) << zero;
  const std::string pipe =
      message_within([&] { sha256_file(fifo.path()); }, std::chrono::seconds(10), [&] { fifo.unblock(); });
  EXPECT_TRUE(has(pipe, fifo.path().string() + " is not a regular file (it is a FIFO")) << pipe;
  const std::string folder = message_within([&] { sha256_file(dir.path()); });
  EXPECT_TRUE(has(folder, dir.path().string() + " is not a regular file (it is a folder)")) << folder;
  const std::string missing = message_within([&] { sha256_file(dir.path() / "none.pt"); });
  EXPECT_TRUE(has(missing, (dir.path() / "none.pt").string() + ": no such file")) << missing;
}

TEST(HostileFiles, Sha256StopsWhenTheInterruptFlagIsSet) {
  TempDir dir;
  const fs::path file = dir.path() / "big.bin";
  std::ofstream(file, std::ios::binary) << std::string(3u << 20, 'x');  // three 1 MiB chunks
  std::atomic<int> stop{0};
  const std::string digest = sha256_file(file, &stop);
  EXPECT_EQ(digest, sha256_file(file));
  stop = 15;
  try {
    sha256_file(file, &stop);
    FAIL() << "the digest was computed although the interrupt flag was set";
  } catch (const Interrupted& e) {
    EXPECT_TRUE(has(e.what(), file.string())) << e.what();
    EXPECT_TRUE(has(e.what(), "interrupt")) << e.what();
  }
  // Interrupted is a std::runtime_error, so callers that only know that still see a failure.
  EXPECT_THROW(sha256_file(file, &stop), std::runtime_error);
}

TEST(HostileFiles, RegularFileReadsNoFurtherThanTheSizeAtOpen) {
  TempDir dir;
  const fs::path file = dir.path() / "labels.txt";
  std::ofstream(file) << "a\nb\n";
  RegularFile f(file, "labels file " + file.string());
  EXPECT_EQ(f.size(), 4u);
  std::ofstream(file, std::ios::app) << "c\nd\n";  // grows after the open
  char buf[64];
  EXPECT_EQ(f.read(buf, sizeof buf), 4u);
  EXPECT_EQ(std::string(buf, 4), "a\nb\n");
  EXPECT_EQ(f.read(buf, sizeof buf), 0u);
  const std::string limit = message_within([&] { read_regular_file(file, "labels file " + file.string(), 7); });
  EXPECT_TRUE(has(limit, "labels file " + file.string() + ": 8 bytes, more than the limit of 7")) << limit;
}

TEST(HostileFiles, AGraphThatIsNotARegularFileIsNamedNotCalledMissing) {
  TempDir dir;
  Manifest m = parse_manifest(replace(read(kFixtures / "valid.yaml"), "graph_path: small.bin", "graph_path: /dev/zero"),
                              dir.path() / "m.yaml");
  const std::string e = message_within([&] { verify_checksum(m, "libtorch"); });
  EXPECT_TRUE(has(e, "/dev/zero is not a regular file (it is a character device)")) << e;
  EXPECT_FALSE(has(e, "missing")) << e;
}

TEST(HostileFiles, AManifestFileThatIsAFifoIsRefusedAtOnce) {
  TempDir dir;
  Fifo fifo(dir.path() / "m.yaml");
  ASSERT_TRUE(fifo.ok());
  const std::string e =
      message_within([&] { load_manifest(fifo.path()); }, std::chrono::seconds(10), [&] { fifo.unblock(); });
  EXPECT_TRUE(has(e, fifo.path().string())) << e;
  EXPECT_TRUE(has(e, "not a regular file (it is a FIFO")) << e;
}

// A 300-character graph_path made std::filesystem::exists throw ENAMETOOLONG in the server's model listing (500).
TEST(ManifestPaths, ANameLongerThanNameMaxIsRefusedNamingTheField) {
  const std::string e = manifest_error("valid.yaml", "graph_path: small.bin", "graph_path: " + std::string(300, 'g'));
  EXPECT_TRUE(has(e, "field 'model.graph_path'")) << e;
  EXPECT_TRUE(has(e, "at most 255 bytes (NAME_MAX), got one of 300 bytes")) << e;
  const std::string l = manifest_error("valid.yaml", "labels: labels.txt", "labels: dir/" + std::string(256, 'l'));
  EXPECT_TRUE(has(l, "field 'outputs[0].labels'")) << l;
  EXPECT_TRUE(has(l, "got one of 256 bytes")) << l;
  const std::string t = manifest_error("gpt2_tiny.yaml", "tokenize: {model: gpt2_tokenizer.model",
                                       "tokenize: {model: " + std::string(256, 't'));
  EXPECT_TRUE(has(t, "field 'inputs[0].steps[0].tokenize.model'")) << t;
  const std::string p = manifest_error("gpt2_tiny.yaml", "task: text_generation",
                                       "task: text_generation\n  prompts: " + std::string(400, 'p') + ".txt");
  EXPECT_TRUE(has(p, "field 'attributes.prompts'")) << p;
  const std::string d = manifest_error("valid.yaml", "task: image_classification",
                                       "task: image_classification\n  dataset_path: " + std::string(260, 'd'));
  EXPECT_TRUE(has(d, "field 'attributes.dataset_path'")) << d;
  // 255 bytes is a name Linux allows; other attributes are free text.
  EXPECT_EQ(manifest_error("valid.yaml", "graph_path: small.bin", "graph_path: " + std::string(255, 'g')), "(parsed)");
  EXPECT_EQ(manifest_error("valid.yaml", "training_dataset: none", "training_dataset: " + std::string(300, 'n')),
            "(parsed)");
}

TEST(ManifestPaths, ANulByteOrAPathLongerThanPathMaxOnceResolvedIsRefused) {
  const std::string nul = manifest_error("valid.yaml", "graph_path: small.bin", "graph_path: \"small\\0.bin\"");
  EXPECT_TRUE(has(nul, "field 'model.graph_path'")) << nul;
  EXPECT_TRUE(has(nul, "without NUL bytes, got one at byte 6")) << nul;
  // 20 names of 200 bytes: 4,019 bytes as written, more than 4,096 once resolved against a deep manifest folder.
  std::string deep;
  for (int i = 0; i < 20; ++i) deep += std::string(200, 'a' + i) + "/";
  deep += "x.pt";
  ASSERT_LE(deep.size(), 4096u);
  const std::string e = manifest_error("valid.yaml", "graph_path: small.bin", "graph_path: " + deep,
                                       "/" + std::string(200, 'z') + "/m.yaml");
  EXPECT_TRUE(has(e, "field 'model.graph_path'")) << e;
  EXPECT_TRUE(has(e, "at most 4096 bytes (PATH_MAX) once resolved against the manifest's folder")) << e;
  EXPECT_EQ(manifest_error("valid.yaml", "graph_path: small.bin", "graph_path: " + deep, "/zoo/m.yaml"), "(parsed)");
}

TEST(ManifestPaths, AZooListsSuchAManifestAsAProblemAndLoadsTheOthers) {
  TempDir dir;
  std::ofstream(dir.path() / "good.yaml") << read(kFixtures / "valid.yaml");
  std::ofstream(dir.path() / "long.yaml")
      << replace(replace(read(kFixtures / "valid.yaml"), "name: TestNet", "name: LongPath"), "graph_path: small.bin",
                 "graph_path: " + std::string(300, 'g'));
  const Zoo zoo = scan_zoo(dir.path());
  ASSERT_EQ(zoo.models.size(), 1u);
  EXPECT_EQ(zoo.models[0].name, "TestNet");
  ASSERT_EQ(zoo.problems.size(), 1u);
  EXPECT_EQ(zoo.problems[0].file, dir.path() / "long.yaml");
  EXPECT_EQ(zoo.problems[0].name, "LongPath");
  EXPECT_TRUE(has(zoo.problems[0].message, "field 'model.graph_path'")) << zoo.problems[0].message;
  EXPECT_TRUE(has(zoo.problems[0].message, "NAME_MAX")) << zoo.problems[0].message;
}
