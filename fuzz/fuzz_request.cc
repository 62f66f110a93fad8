// A REST API request as `xsp serve` reads one before any work (docs/server.md "Security"): the body through
// job_submission_from_json (the strict request reader and validate_fields), and the header checks of http_policy.h on
// header values cut from the same input. A rejection must say why; nothing else may escape.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "xsp/queue/jobs.h"
#include "xsp/server/http_policy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json body = nlohmann::json::parse(text);
    const xsp::JobSubmission s = xsp::job_submission_from_json(body);
    // What is accepted must survive the round trip the queue makes (a job row is to_json of the request).
    (void)xsp::evaluation_request_from_json(xsp::to_json(s.request));
  } catch (const nlohmann::json::exception& e) {
    xsp::fuzz::require_message(e);
  } catch (const xsp::RequestError& e) {
    xsp::fuzz::require_message(e);
  }
  // The first four lines as Host, Origin, Content-Type and Sec-Fetch-Site.
  std::vector<std::optional<std::string>> h(4);
  std::size_t pos = 0;
  for (auto& v : h) {
    if (pos > text.size()) break;
    const std::size_t nl = text.find('\n', pos);
    v = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() + 1 : nl + 1;
  }
  const xsp::detail::HostNames names{{"localhost", "box"}};
  if (auto r = xsp::detail::check_host(h[0], names); r && r->message.empty()) __builtin_trap();
  for (const char* method : {"POST", "DELETE"})
    if (auto r = xsp::detail::check_write(method, h[2], h[1], h[3], h[0]); r && r->message.empty()) __builtin_trap();
  return 0;
}
