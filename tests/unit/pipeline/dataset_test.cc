// Dataset reader (format errors named) and top-k counting on hand-made scores.
#include "xsp/pipeline/dataset.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>

namespace xsp {
namespace {

std::filesystem::path write_file(const std::string& name, const std::string& bytes) {
  const auto p = std::filesystem::temp_directory_path() / ("xsp_dataset_test_" + name);
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

std::string u32(std::uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }
std::string f32(float v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

TEST(Dataset, ReadsSamplesAndLabels) {
  // Two samples of shape {1, 2}: [0.5, 1] label 3, [0, 0.25] label 7.
  const std::string bytes = std::string("XSPDS1\0\0", 8) + u32(2) + u32(2) + u32(1) + u32(2) + f32(0.5f) + f32(1.0f) +
                            u32(3) + f32(0.0f) + f32(0.25f) + u32(7);
  const auto ds = read_labeled_dataset(write_file("ok.bin", bytes));
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds.sample_shape, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(ds.labels, (std::vector<int>{3, 7}));
  const Tensor b = ds.batch(1, 1);
  EXPECT_EQ(b.shape, (std::vector<std::int64_t>{1, 1, 2}));
  EXPECT_EQ(b.data, (std::vector<float>{0.0f, 0.25f}));
  EXPECT_THROW(ds.batch(1, 2), std::out_of_range);

  auto message = [](const std::string& name, const std::string& data) {
    try {
      read_labeled_dataset(write_file(name, data));
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("magic.bin", "NOTMAGIC" + u32(0)).find("magic"), std::string::npos);
  EXPECT_NE(message("trunc.bin", bytes.substr(0, bytes.size() - 2)).find("truncated at sample 1"), std::string::npos);
  EXPECT_NE(message("trail.bin", bytes + "x").find("trailing"), std::string::npos);
  EXPECT_NE(message("rank.bin", std::string("XSPDS1\0\0", 8) + u32(1) + u32(0)).find("rank = 0"), std::string::npos);
  EXPECT_NE(message("none.bin.missing-", "").find("xsp_dataset_test_none"),
            std::string::npos);  // empty file: the error names it
}

TEST(Accuracy, TopOneAndTopK) {
  Tensor scores;
  scores.shape = {3, 6};
  scores.data = {
      0.1f, 0.9f, 0.0f, 0.0f, 0.0f, 0.0f,  // best 1
      6.0f, 5.0f, 4.0f, 3.0f, 2.0f, 1.0f,  // order 0 1 2 3 4 5
      6.0f, 5.0f, 4.0f, 3.0f, 2.0f, 1.0f,
  };
  AccuracyCounts c;                   // k = 5
  score_batch(c, scores, {1, 4, 5});  // right; 5th best (top-5 only); 6th (neither)
  EXPECT_EQ(c.samples, 3u);
  EXPECT_EQ(c.top1, 1u);
  EXPECT_EQ(c.topk, 2u);
  EXPECT_NEAR(c.top1_percent(), 100.0 / 3, 1e-12);
  EXPECT_NEAR(c.topk_percent(), 200.0 / 3, 1e-12);
  EXPECT_THROW(score_batch(c, scores, {1, 2}), std::invalid_argument);
  EXPECT_THROW(score_batch(c, scores, {1, 2, 6}), std::invalid_argument);
  EXPECT_EQ(c.samples, 3u);  // a rejected batch counts nothing, not even its rows before the bad label
}

}  // namespace
}  // namespace xsp
