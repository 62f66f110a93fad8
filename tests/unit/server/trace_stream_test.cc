// GET /api/v1/evaluations/{id}/trace?format=perfetto streams the stored trace chunk by chunk (docs/server.md): the
// bytes are those `xsp trace export --format perfetto` writes, and every request error is still a 4xx JSON answer,
// given before the stream starts.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "server_fixture.h"
#include "xsp/store/trace_export.h"

namespace xsp {
namespace {

using nlohmann::json;
using testing::ServerFixture;

class TraceStream : public ServerFixture {
 protected:
  void SetUp() override {
    ServerFixture::SetUp();
    id_ = seed_evaluation();
    start();
  }
  std::int64_t id_ = 0;
};

TEST_F(TraceStream, PerfettoIsChunkedAndEqualsTheFileExport) {
  auto c = client();
  const std::string base = "/api/v1/evaluations/" + std::to_string(id_) + "/trace?format=perfetto";
  const auto r = c.Get(base + "&run=2");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Transfer-Encoding"), "chunked");
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/octet-stream");
  EXPECT_EQ(r->get_header_value("Content-Disposition"),
            "attachment; filename=\"xsp-evaluation-" + std::to_string(id_) + "-run-2.pftrace\"");
  ASSERT_FALSE(r->body.empty());

  // The CLI's export of the same run, through the same store.
  auto store = Store::open(dir_ / "s.db", StoreAccess::kRead);
  const auto record = store->load_without_traces(id_);
  ASSERT_TRUE(record);
  const auto file = dir_ / "run.pftrace";
  export_stored_trace(*store, *record, record->runs[1], TraceFormat::kPerfetto, file);
  std::ifstream in(file, std::ios::binary);
  const std::string expected(std::istreambuf_iterator<char>(in), {});
  EXPECT_EQ(r->body.size(), expected.size());
  EXPECT_TRUE(r->body == expected) << "the download differs from the file export";
}

TEST_F(TraceStream, BadRequestsAreStill4xxBeforeTheStream) {
  auto c = client();
  const std::string base = "/api/v1/evaluations/" + std::to_string(id_) + "/trace?format=perfetto";
  auto expect_error = [&](const std::string& url, int status, const std::string& field) {
    const auto r = c.Get(url);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << url << ": " << r->body;
    const json j = json::parse(r->body);
    EXPECT_EQ(j["error"].value("field", ""), field) << r->body;
  };
  expect_error("/api/v1/evaluations/12345/trace?format=perfetto", 404, "id");
  expect_error(base + "&run=99", 404, "run");
  expect_error(base + "&run=0", 400, "run");
  expect_error(base + "&batch_size=64", 404, "batch_size");
  expect_error(base + "&batches=5:3", 400, "batches");
  expect_error(base + "&batches=x", 400, "batches");
  expect_error(base + "&batches=1000:1001", 400, "batches");  // no such batch: found in the first pass
  expect_error("/api/v1/evaluations/" + std::to_string(id_) + "/trace?format=chrome&batches=1000:1001", 400, "batches");
  expect_error(base + "&bogus=1", 400, "bogus");
}

}  // namespace
}  // namespace xsp
