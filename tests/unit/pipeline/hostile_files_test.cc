// Issue 31, finding 5: every reader of a file that a manifest or a request names (input images, labels, the tokenizer
// model, prompts, a labeled dataset) refuses /dev/zero, a FIFO and a folder at once, naming the file and what it is.
#include "../manifest/hostile_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "xsp/pipeline/dataset.h"
#include "xsp/pipeline/pipeline.h"
#include "xsp/pipeline/tokenizer.h"

namespace fs = std::filesystem;
using namespace xsp;
using xsp::testing::Fifo;
using xsp::testing::has;
using xsp::testing::message_within;

namespace {

struct Reader {
  std::string name;
  std::function<void(const fs::path&)> read;
};

// Tokenizer::load only in a build with SentencePiece (without it, it refuses every file the same way).
std::vector<Reader> readers() {
  std::vector<Reader> all = {
      {"read_input", [](const fs::path& f) { read_input(f); }},
      {"load_labels", [](const fs::path& f) { load_labels(f); }},
      {"load_prompts", [](const fs::path& f) { load_prompts(f); }},
      {"read_labeled_dataset", [](const fs::path& f) { read_labeled_dataset(f); }},
  };
  if (have_tokenizer()) all.push_back({"Tokenizer::load", [](const fs::path& f) { Tokenizer::load(f); }});
  return all;
}

}  // namespace

TEST(HostileFiles, EveryReaderRefusesDevZeroAFifoAndAFolderAtOnce) {
  const fs::path dir = fs::temp_directory_path() / ("xsp-hostile-pipeline-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  Fifo fifo(dir / "input.png");
  ASSERT_TRUE(fifo.ok());
  for (const Reader& r : readers()) {
    SCOPED_TRACE(r.name);
    // The file is named (the tokenizer quotes it), then what it is.
    const std::string zero = message_within([&] { r.read("/dev/zero"); });
    EXPECT_TRUE(has(zero, "/dev/zero") && has(zero, " is not a regular file (it is a character device)")) << zero;
    const std::string pipe =
        message_within([&] { r.read(fifo.path()); }, std::chrono::seconds(10), [&] { fifo.unblock(); });
    EXPECT_TRUE(has(pipe, fifo.path().string()) && has(pipe, " is not a regular file (it is a FIFO")) << pipe;
    const std::string folder = message_within([&] { r.read(dir); });
    EXPECT_TRUE(has(folder, dir.string()) && has(folder, " is not a regular file (it is a folder)")) << folder;
  }
  fs::remove_all(dir);
}

// The dataset's header is checked against the file's size before the samples are allocated: a 28-byte file whose
// header claims a million samples of 1000 floats is truncated, not a 4 GB allocation.
TEST(HostileFiles, ADatasetHeaderClaimingMoreThanTheFileHoldsIsRefusedBeforeAllocating) {
  const fs::path file = fs::temp_directory_path() / ("xsp-hostile-dataset-" + std::to_string(::getpid()) + ".bin");
  {
    std::string bytes("XSPDS1\0\0", 8);
    for (std::uint32_t v : {1000000u, 1u, 1000u, 7u})
      for (int i = 0; i < 4; ++i) bytes += static_cast<char>((v >> (8 * i)) & 0xFF);
    std::ofstream(file, std::ios::binary) << bytes;
  }
  const std::string e = message_within([&] { read_labeled_dataset(file); });
  fs::remove(file);
  EXPECT_TRUE(has(e, file.string())) << e;
  EXPECT_TRUE(has(e, "truncated at sample 0 of 1000000")) << e;
}
