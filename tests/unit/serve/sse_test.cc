#include "xsp/serve/sse.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace xsp::serve {
namespace {

std::vector<std::string> parse_in_pieces(const std::string& stream, std::size_t piece) {
  std::vector<std::string> events;
  SseParser p([&](std::string_view d) { events.emplace_back(d); });
  for (std::size_t i = 0; i < stream.size(); i += piece) p.feed(std::string_view(stream).substr(i, piece));
  p.finish();
  return events;
}

TEST(SseParser, EventsComeOutWholeHoweverTheStreamIsSplit) {
  const std::string stream =
      ": ping\r\n"
      "data: {\"choices\": [{\"text\": \"a\"}]}\r\n\r\n"
      "event: message\n"
      "data:{\"x\":1}\n\n"
      "data: line one\n"
      "data: line two\n\n"
      "id: 3\r"
      "data: cr only\r\r"
      "data: [DONE]\n\n";
  const std::vector<std::string> expected{"{\"choices\": [{\"text\": \"a\"}]}", "{\"x\":1}", "line one\nline two",
                                          "cr only", "[DONE]"};
  for (std::size_t piece = 1; piece <= stream.size(); ++piece)
    EXPECT_EQ(parse_in_pieces(stream, piece), expected) << "pieces of " << piece << " bytes";
}

TEST(SseParser, ACrlfSplitBetweenReadsIsOneLineEnd) {
  std::vector<std::string> events;
  SseParser p([&](std::string_view d) { events.emplace_back(d); });
  p.feed("data: a\r");
  p.feed("\n\r");
  p.feed("\n");
  EXPECT_EQ(events, std::vector<std::string>{"a"});
}

TEST(SseParser, FinishDispatchesAnEventWithoutItsBlankLine) {
  std::vector<std::string> events;
  SseParser p([&](std::string_view d) { events.emplace_back(d); });
  p.feed("data: [DONE]");
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(p.pending_bytes(), 12u);
  p.finish();
  EXPECT_EQ(events, std::vector<std::string>{"[DONE]"});
  p.finish();  // idempotent
  EXPECT_EQ(events.size(), 1u);
}

TEST(SseParser, CommentsAndOtherFieldsDispatchNothing) {
  std::vector<std::string> events;
  SseParser p([&](std::string_view d) { events.emplace_back(d); });
  p.feed(": keep-alive\n\nevent: x\nid: 1\nretry: 10\n\n\n\n");
  p.finish();
  EXPECT_TRUE(events.empty());
}

TEST(SseParser, EmptyDataIsAnEvent) {
  std::vector<std::string> events;
  SseParser p([&](std::string_view d) { events.emplace_back(d); });
  p.feed("data\n\ndata:\n\n");
  EXPECT_EQ(events, (std::vector<std::string>{"", ""}));
}

TEST(SseParser, RandomBytesNeverGrowItWithoutBound) {
  std::uint64_t x = 42;
  std::size_t events = 0;
  SseParser p([&](std::string_view) { ++events; });
  std::string piece(4096, '\0');
  for (int round = 0; round < 512; ++round) {  // 2 MiB of random bytes, about one line end in 128
    for (char& c : piece) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      c = static_cast<char>(x & 0xff);
    }
    p.feed(piece);
    ASSERT_LE(p.pending_bytes(), SseParser::kMaxLineBytes);
  }
  p.finish();
  EXPECT_FALSE(p.overflowed());
  // A line without an end is cut at the limit, and says so.
  SseParser q([&](std::string_view) {});
  const std::string mib(1 << 20, 'a');
  for (int i = 0; i < 17; ++i) q.feed(mib);
  EXPECT_TRUE(q.overflowed());
  EXPECT_EQ(q.pending_bytes(), SseParser::kMaxLineBytes);
}

}  // namespace
}  // namespace xsp::serve
