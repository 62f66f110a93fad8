// The attacks of issue 31 against `xsp serve` on loopback, each a test that failed on the server before it was fixed
// (docs/server.md "Security"): files outside the zoo and data folders, cross-site writes and DNS rebinding, slow and
// oversized requests, unbounded request fields, a hostile zoo, a symlink planted where downloads used to be written,
// and client errors that were answered 500.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "server_fixture.h"
#include "xsp/server/http_policy.h"

namespace xsp {
namespace {

using nlohmann::json;
using testing::ServerFixture;
using Ms = std::chrono::milliseconds;

// ---- raw sockets, for what httplib's client will not send ----------------------------------------------------

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// What the server sends until it closes the connection or `timeout` passes without a byte.
std::string read_until_closed(int fd, Ms timeout) {
  std::string out;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return out;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return 0;
  return std::stoi(response.substr(9, 3));
}

class ServerAttacks : public ServerFixture {
 protected:
  void SetUp() override {
    ServerFixture::SetUp();
    outside_ = dir_ / "outside";
    data_ = dir_ / "data";
    std::filesystem::create_directories(outside_);
    std::filesystem::create_directories(data_);
    { std::ofstream(outside_ / "secret.txt") << "TOP-SECRET-LINE\nanother secret\n"; }
  }
  ServerOptions options() {
    ServerOptions o = ServerFixture::options();
    o.data_dirs = {data_};
    return o;
  }
  // Asserts status and field of an error answer; returns its message.
  static std::string expect_error(const httplib::Result& r, int status, const std::string& field) {
    EXPECT_TRUE(r) << "no answer";
    if (!r) return "";
    EXPECT_EQ(r->status, status) << r->body;
    json j;
    try {
      j = json::parse(r->body);
    } catch (const std::exception&) {
      ADD_FAILURE() << "not JSON: " << r->body;
      return "";
    }
    EXPECT_EQ(j["error"].value("field", ""), field) << r->body;
    return j["error"].value("message", "");
  }
  httplib::Result post(httplib::Client& c, const std::string& path, const json& body,
                       const httplib::Headers& headers = {}) {
    return c.Post(path.c_str(), headers, body.dump(), "application/json");
  }
  std::filesystem::path outside_, data_;
};

// ---- 1. files ------------------------------------------------------------------------------------------------------

TEST_F(ServerAttacks, RequestsMayNotNameFilesOutsideTheZooAndDataFolders) {
  start(options());
  auto c = client();
  json r = testing::quick_request();
  r["generation"] = {{"prompts_file", (outside_ / "secret.txt").string()}};
  std::string m = expect_error(post(c, "/api/v1/evaluations", r), 400, "generation.prompts_file");
  EXPECT_NE(m.find("inside the folders"), std::string::npos) << m;
  // The same through the job shape, the other endpoint, and a path that climbs out of the data folder.
  r["generation"] = {{"prompts_file", (data_ / ".." / "outside" / "secret.txt").string()}};
  expect_error(post(c, "/api/v1/jobs", json{{"request", r}}), 400, "request.generation.prompts_file");
  r = testing::quick_request();
  r["inputs"] = {{"images_dir", outside_.string()}, {"synthetic", false}};
  expect_error(post(c, "/api/v1/evaluations", r), 400, "inputs.images_dir");
  r["inputs"] = {{"images_dir", "/etc"}, {"synthetic", false}};
  expect_error(post(c, "/api/v1/evaluations", r), 400, "inputs.images_dir");
  // Files that would be written where the request says.
  r = testing::quick_request();
  r["cupti"] = {{"dump_dir", "/etc/cron.d"}};
  expect_error(post(c, "/api/v1/evaluations", r), 400, "cupti.dump_dir");
  // A link inside the data folder that leads out of it.
  std::filesystem::create_directories(data_ / "images");
  std::filesystem::create_symlink(outside_, data_ / "escape");
  r = testing::quick_request();
  r["inputs"] = {{"images_dir", (data_ / "escape").string()}, {"synthetic", false}};
  m = expect_error(post(c, "/api/v1/evaluations", r), 400, "inputs.images_dir");
  EXPECT_NE(m.find("symbolic link"), std::string::npos) << m;
  // A folder inside is accepted by the rule (the fake model then refuses image inputs for its own reason).
  r["inputs"] = {{"images_dir", (data_ / "images").string()}, {"synthetic", false}};
  m = expect_error(post(c, "/api/v1/evaluations", r), 400, "inputs.synthetic");
  EXPECT_EQ(m.find("inside the folders"), std::string::npos) << m;
  // Nothing ran, and the secret is nowhere in what the server answers.
  const auto jobs = c.Get("/api/v1/jobs");
  EXPECT_TRUE(body(jobs)["jobs"].empty());
  EXPECT_EQ(jobs->body.find("TOP-SECRET"), std::string::npos);
}

TEST_F(ServerAttacks, AManifestNamingAFileOutsideTheZooIsRefused) {
  const auto zoo = dir_ / "zoo";
  std::filesystem::copy_file(zoo / "fake.bin", outside_ / "fake.bin");
  std::string yaml;
  {
    std::ifstream in(zoo / "server_model.yaml");
    yaml.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto at = yaml.find("graph_path: fake.bin");
  ASSERT_NE(at, std::string::npos);
  yaml.replace(at, std::string("graph_path: fake.bin").size(), "graph_path: " + (outside_ / "fake.bin").string());
  yaml.replace(yaml.find("name: server_model"), std::string("name: server_model").size(), "name: escaping_model");
  { std::ofstream(zoo / "escaping_model.yaml") << yaml; }
  start(options());
  auto c = client();
  json r = testing::quick_request();
  r["model"] = "escaping_model";
  const std::string m = expect_error(post(c, "/api/v1/evaluations", r), 400, "model");
  EXPECT_NE(m.find("graph file"), std::string::npos) << m;
}

// ---- 2. cross-site writes and DNS rebinding ----------------------------------------------------------------------

TEST_F(ServerAttacks, CrossSiteWritesAreRefused) {
  start(options());
  auto c = client();
  const std::string request = testing::quick_request().dump();
  const httplib::Headers evil = {{"Origin", "http://evil.example"}};
  // What a form or a no-preflight fetch() on any site can send.
  expect_error(c.Post("/api/v1/evaluations", evil, request, "text/plain"), 415, "Content-Type");
  expect_error(c.Post("/api/v1/jobs", evil, request, "application/x-www-form-urlencoded"), 415, "Content-Type");
  // httplib reads a multipart body before any route sees it: refused as malformed or as the wrong type.
  const auto multipart = c.Post("/api/v1/jobs", evil, request, "multipart/form-data; boundary=x");
  ASSERT_TRUE(multipart);
  EXPECT_TRUE(multipart->status == 400 || multipart->status == 415) << multipart->status;
  expect_error(c.Post("/api/v1/jobs", request, "text/plain"), 415, "Content-Type");
  // JSON from another origin, or marked cross-site by the browser.
  expect_error(c.Post("/api/v1/jobs", evil, request, "application/json"), 403, "Origin");
  expect_error(c.Post("/api/v1/jobs", {{"Origin", "null"}}, request, "application/json"), 403, "Origin");
  expect_error(c.Post("/api/v1/jobs", {{"Sec-Fetch-Site", "cross-site"}}, request, "application/json"), 403,
               "Sec-Fetch-Site");
  EXPECT_TRUE(body(c.Get("/api/v1/jobs"))["jobs"].empty());
  // A running job is not cancelled by a forged request.
  testing::g_block_at_batch_2 = true;
  const auto ok = c.Post("/api/v1/jobs", {{"Origin", "http://127.0.0.1:" + std::to_string(server_->port())}}, request,
                         "application/json");
  ASSERT_EQ(ok->status, 202) << ok->body;  // the server's own page may write
  const std::int64_t id = body(ok)["job"]["id"];
  while (!testing::g_blocked) std::this_thread::sleep_for(Ms(5));
  const std::string cancel = "/api/v1/jobs/" + std::to_string(id) + "/cancel";
  expect_error(c.Post(cancel, evil, "", "text/plain"), 415, "Content-Type");
  expect_error(c.Post(cancel, evil, "", "application/json"), 403, "Origin");
  expect_error(c.Delete("/api/v1/evaluations/1", evil), 403, "Origin");
  EXPECT_EQ(body(c.Get("/api/v1/jobs/" + std::to_string(id)))["job"]["state"], "running");
  testing::g_release = true;
  EXPECT_EQ(wait_for_job(id)["state"], "done");
}

TEST_F(ServerAttacks, AForeignHostNameIsMisdirectedAndNoCorsHeadersAreSent) {
  seed_evaluation();
  ServerOptions o = options();
  o.allowed_hosts = {"xsp.example.org"};
  start(o);
  auto c = client();
  const std::string port = std::to_string(server_->port());
  for (const char* path : {"/api/v1/evaluations", "/api/v1/evaluations/1", "/", "/api"}) {
    const auto r = c.Get(path, {{"Host", "evil.example:" + port}});
    expect_error(r, 421, "Host");
    EXPECT_EQ(r->body.find("server_model"), std::string::npos);
  }
  for (const std::string& host : std::vector<std::string>{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST",
                                                          "[::1]:" + port, "xsp.example.org", "10.1.2.3:" + port}) {
    const auto r = c.Get("/api/v1/evaluations", {{"Host", host}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << host << ": " << r->body;
  }
  const int fd = connect_to(server_->port());
  ASSERT_GE(fd, 0);
  send_all(fd, "GET /api/v1/evaluations HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(read_until_closed(fd, Ms(5000))), 400);  // HTTP/1.1 without Host
  ::close(fd);
  // A preflight and a cross-origin read get no CORS grant: the browser keeps the answer from the page.
  const auto pre = c.Options("/api/v1/jobs", {{"Origin", "http://evil.example"},
                                              {"Access-Control-Request-Method", "POST"},
                                              {"Access-Control-Request-Headers", "content-type"}});
  ASSERT_TRUE(pre);
  EXPECT_GE(pre->status, 400);
  const auto read = c.Get("/api/v1/evaluations", {{"Origin", "http://evil.example"}});
  for (const auto* r : {&pre.value(), &read.value()})
    for (const auto& [name, value] : r->headers)
      EXPECT_EQ(name.rfind("Access-Control-", 0), std::string::npos) << name << ": " << value;
}

TEST(HttpPolicy, HostAndOriginRules) {
  detail::HostNames names{{"localhost", "box"}};
  EXPECT_FALSE(detail::check_host(std::string("127.0.0.1:8080"), names));
  EXPECT_FALSE(detail::check_host(std::string("[::1]:8080"), names));
  EXPECT_FALSE(detail::check_host(std::string("Box."), names));
  EXPECT_EQ(detail::check_host(std::string("box.evil.example"), names)->status, 421);
  EXPECT_EQ(detail::check_host(std::nullopt, names)->status, 400);
  EXPECT_EQ(detail::check_host(std::string("a b"), names)->status, 400);
  EXPECT_EQ(detail::check_host(std::string("box:99999"), names)->status, 400);
  EXPECT_EQ(detail::check_host(std::string("[::1"), names)->status, 400);
  const std::optional<std::string> json_type("application/json; charset=utf-8"), host("box:8080");
  EXPECT_FALSE(
      detail::check_write("POST", json_type, std::string("http://box:8080"), std::string("same-origin"), host));
  EXPECT_FALSE(detail::check_write("DELETE", std::nullopt, std::nullopt, std::nullopt, host));
  EXPECT_EQ(detail::check_write("POST", std::nullopt, std::nullopt, std::nullopt, host)->status, 415);
  EXPECT_EQ(detail::check_write("POST", json_type, std::string("http://box:8081"), std::nullopt, host)->status, 403);
  EXPECT_EQ(detail::check_write("POST", json_type, std::string("http://evil:8080"), std::nullopt, host)->status, 403);
  EXPECT_EQ(detail::check_write("POST", json_type, std::nullopt, std::string("same-site"), host)->status, 403);
  // Behind a TLS proxy: the browser's origin is https on 443, the Host the proxy forwards has no port.
  EXPECT_FALSE(detail::check_write("POST", json_type, std::string("https://box"), std::nullopt, std::string("box")));
}

// ---- 3. slow clients -------------------------------------------------------------------------------------------

TEST_F(ServerAttacks, SlowClientsDoNotKeepOthersWaiting) {
  seed_evaluation();
  ServerOptions o = options();
  o.threads = 4;  // far fewer workers than attackers
  start(o);
  // 32 connections that each send one header byte a second: none ever completes its request.
  std::vector<int> slow;
  for (int i = 0; i < 32; ++i) {
    const int fd = connect_to(server_->port());
    ASSERT_GE(fd, 0);
    send_all(fd, "GET /api/v1/evaluations HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
    slow.push_back(fd);
  }
  std::atomic<bool> done{false};
  std::thread trickle([&] {
    while (!done) {
      for (int fd : slow) send_all(fd, "a");
      std::this_thread::sleep_for(Ms(1000));
    }
  });
  // Meanwhile a probe keeps asking: every answer within 1 s.
  httplib::Client probe("127.0.0.1", server_->port());
  probe.set_read_timeout(5, 0);
  double worst_ms = 0;
  int answered = 0;
  const auto until = std::chrono::steady_clock::now() + Ms(6000);
  while (std::chrono::steady_clock::now() < until) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = probe.Get("/api/v1/evaluations");
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    worst_ms = std::max(worst_ms, ms);
    if (r && r->status == 200) ++answered;
    std::this_thread::sleep_for(Ms(200));
  }
  done = true;
  trickle.join();
  for (int fd : slow) ::close(fd);
  EXPECT_GE(answered, 20);
  EXPECT_LT(worst_ms, 1000) << "the slowest probe answer took " << worst_ms << " ms";
}

TEST_F(ServerAttacks, ARequestThatDoesNotArriveInTimeGets408AndIdleConnectionsAreClosed) {
  ServerOptions o = options();
  o.request_timeout = Ms(800);
  o.idle_timeout = Ms(500);
  start(o);
  int fd = connect_to(server_->port());
  ASSERT_GE(fd, 0);
  send_all(fd, "GET /api/v1/evaluations HTTP/1.1\r\nHost: 127.0.0.1\r\n");  // and no more
  const auto t0 = std::chrono::steady_clock::now();
  const std::string answer = read_until_closed(fd, Ms(5000));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(status_of(answer), 408) << answer;
  EXPECT_LT(s, 3.0);
  ::close(fd);
  fd = connect_to(server_->port());
  ASSERT_GE(fd, 0);
  EXPECT_EQ(read_until_closed(fd, Ms(5000)), "");  // closed without a word after idling
  ::close(fd);
}

TEST_F(ServerAttacks, ConnectionsPerClientAreCapped) {
  ServerOptions o = options();
  o.max_connections_per_client = 4;
  start(o);
  std::vector<int> held;
  for (int i = 0; i < 4; ++i) held.push_back(connect_to(server_->port()));
  std::this_thread::sleep_for(Ms(100));
  const int fifth = connect_to(server_->port());
  ASSERT_GE(fifth, 0);
  EXPECT_EQ(status_of(read_until_closed(fifth, Ms(5000))), 429);
  ::close(fifth);
  for (int fd : held) ::close(fd);
  std::this_thread::sleep_for(Ms(100));
  EXPECT_EQ(client().Get("/api/v1/evaluations")->status, 200);  // the slots are free again
}

// ---- 4. sizes and counts -------------------------------------------------------------------------------------------

TEST_F(ServerAttacks, LongLinesHeadersAndBodiesAreRefusedBeforeTheyAreRead) {
  start(options());
  // A request line longer than 8 KiB: answered after 16 KiB, not read to its end (it has none).
  int fd = connect_to(server_->port());
  send_all(fd, "GET /" + std::string(16 << 10, 'a'));
  std::string answer = read_until_closed(fd, Ms(5000));
  EXPECT_EQ(status_of(answer), 414) << answer.substr(0, 200);
  EXPECT_NE(answer.find("\"error\""), std::string::npos);
  ::close(fd);
  // A header longer than the head's limit.
  fd = connect_to(server_->port());
  send_all(fd, "GET /api/v1/evaluations HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(64 << 10, 'b'));
  EXPECT_EQ(status_of(read_until_closed(fd, Ms(5000))), 431);
  ::close(fd);
  // A body announced larger than --max-body-bytes: refused before a byte of it is sent.
  fd = connect_to(server_->port());
  send_all(fd,
           "POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           "Content-Length: 104857600\r\n\r\n");
  answer = read_until_closed(fd, Ms(5000));
  EXPECT_EQ(status_of(answer), 413) << answer;
  EXPECT_NE(answer.find("--max-body-bytes"), std::string::npos);
  ::close(fd);
  // A body without a length.
  fd = connect_to(server_->port());
  send_all(fd,
           "POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           "Transfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(status_of(read_until_closed(fd, Ms(5000))), 411);
  ::close(fd);
  EXPECT_EQ(client().Get("/api/v1/evaluations")->status, 200);
}

TEST_F(ServerAttacks, EverySizeAndCountOfARequestIsBounded) {
  // A model whose one sample is 12 MB: a million of them cannot fit in half of any test machine's memory.
  const auto zoo = dir_ / "zoo";
  std::string yaml;
  {
    std::ifstream in(zoo / "server_model.yaml");
    yaml.assign(std::istreambuf_iterator<char>(in), {});
  }
  yaml.replace(yaml.find("name: server_model"), std::string("name: server_model").size(), "name: big_model");
  yaml.replace(yaml.find("dimensions: [4]"), std::string("dimensions: [4]").size(), "dimensions: [3, 1024, 1024]");
  { std::ofstream(zoo / "big_model.yaml") << yaml; }
  const auto a = seed_evaluation();
  const auto b = seed_evaluation();
  start(options());
  auto c = client();
  json r = testing::quick_request();
  r["batch_sizes"] = json::array();
  for (int i = 1; i <= 5000; ++i) r["batch_sizes"].push_back(i);
  std::string m = expect_error(post(c, "/api/v1/evaluations", r), 400, "batch_sizes");
  EXPECT_NE(m.find("at most 64"), std::string::npos) << m;
  r = testing::quick_request();
  r["model"] = "big_model";
  r["batch_sizes"] = {1048576};
  r["max_batch_bytes"] = 1ull << 40;
  m = expect_error(post(c, "/api/v1/evaluations", r), 400, "batch_sizes");
  EXPECT_NE(m.find("half of this machine's memory"), std::string::npos) << m;
  r = testing::quick_request();
  r["measurement"]["min_duration_ms"] = 31.0 * 365 * 24 * 3600 * 1000;
  expect_error(post(c, "/api/v1/evaluations", r), 400, "measurement.min_duration_ms");
  r = testing::quick_request();
  r["measurement"]["min_batches"] = 4294967297ull;  // wrapped to 1 by an unchecked read
  expect_error(post(c, "/api/v1/evaluations", r), 400, "measurement.min_batches");
  r = testing::quick_request();
  r["batch_sizes"] = {1};
  r["leveled"] = false;
  r["scenario"] = {{"scenario", "server"}, {"target_qps", 1e9}};
  expect_error(post(c, "/api/v1/evaluations", r), 400, "scenario.target_qps");
  r["scenario"] = {{"scenario", "server"}, {"target_qps", 100000}};
  r["measurement"]["min_duration_ms"] = 3600 * 1000;  // 3.6e8 queries planned
  m = expect_error(post(c, "/api/v1/evaluations", r), 400, "scenario.target_qps");
  EXPECT_NE(m.find("min_duration_ms"), std::string::npos) << m;
  // One comparison: at most 8 evaluations, each once.
  const std::string ids = std::to_string(a) + "," + std::to_string(b);
  expect_error(c.Get("/api/v1/compare?ids=" + std::to_string(a) + "," + std::to_string(a)), 400, "ids");
  expect_error(c.Get("/api/v1/compare?ids=1,2,3,4,5,6,7,8,9"), 400, "ids");
  EXPECT_EQ(c.Get("/api/v1/compare?ids=" + ids)->status, 200);
  EXPECT_TRUE(body(c.Get("/api/v1/jobs"))["jobs"].empty());
}

// ---- 5. a hostile zoo ---------------------------------------------------------------------------------------------

// A text model of the fake framework whose tokenizer model is `tokenizer` (inside the zoo).
void write_text_model(const std::filesystem::path& zoo, const std::string& tokenizer) {
  std::ofstream(zoo / "text_model.yaml")
      << "name: text_model\nversion: 1.0.0\nframework:\n  name: server-fake\n  version: \">=1.0\"\n"
      << "model:\n  graph_path: fake.bin\n  checksum: sha256:" << sha256_file(zoo / "fake.bin") << "\n"
      << "inputs:\n  - name: input_ids\n    type: text\n    element_type: int64\n    dimensions: [16]\n"
      << "    steps:\n      - tokenize: {model: " << tokenizer << ", checksum: \"sha256:" << std::string(64, '0')
      << "\"}\n      - pad_truncate: {length: 16, pad_id: 0}\n"
      << "outputs:\n  - type: text_classification\n    steps: [{softmax: {}}]\n"
      << "attributes:\n  prompts: prompts.txt\n";
  std::ofstream(zoo / "prompts.txt") << "a prompt\n";
}

json text_request() {
  json r = testing::quick_request();
  r["model"] = "text_model";
  r["inputs"] = {{"synthetic", false}};
  return r;
}

TEST_F(ServerAttacks, AFifoInTheZooIsRefusedNotWaitedFor) {
  const auto zoo = dir_ / "zoo";
  ASSERT_EQ(::mkfifo((zoo / "tok.model").c_str(), 0600), 0);
  write_text_model(zoo, "tok.model");
  start(options());
  auto c = client();
  c.set_read_timeout(10, 0);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string m = expect_error(post(c, "/api/v1/evaluations", text_request()), 400, "model");
  EXPECT_NE(m.find("not a regular file"), std::string::npos) << m;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

TEST_F(ServerAttacks, StopInterruptsAValidationInProgress) {
  const auto zoo = dir_ / "zoo";
  {  // 64 GiB of holes: minutes of hashing, no disk.
    const int fd = ::open((zoo / "huge.model").c_str(), O_CREAT | O_WRONLY, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, 64ll << 30), 0);
    ::close(fd);
  }
  write_text_model(zoo, "huge.model");
  start(options());
  std::optional<int> status;
  std::thread poster([&] {
    auto c = client();
    const auto r = post(c, "/api/v1/evaluations", text_request());
    if (r) status = r->status;
  });
  std::this_thread::sleep_for(Ms(500));  // hashing by now
  const auto t0 = std::chrono::steady_clock::now();
  server_->stop();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  poster.join();
  EXPECT_LT(s, 5.0) << "stop() waited " << s << " s for the validation";
  if (status) EXPECT_EQ(*status, 503);
}

TEST_F(ServerAttacks, AManifestThatCannotBeListedIsAProblemNotA500) {
  const auto zoo = dir_ / "zoo";
  std::string yaml;
  {
    std::ifstream in(zoo / "server_model.yaml");
    yaml.assign(std::istreambuf_iterator<char>(in), {});
  }
  yaml.replace(yaml.find("name: server_model"), std::string("name: server_model").size(), "name: long_path_model");
  yaml.replace(yaml.find("graph_path: fake.bin"), std::string("graph_path: fake.bin").size(),
               "graph_path: " + std::string(300, 'g') + ".bin");
  { std::ofstream(zoo / "long_path_model.yaml") << yaml; }
  start(options());
  const auto r = client().Get("/api/v1/models");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  ASSERT_EQ(j["models"].size(), 1u);
  EXPECT_EQ(j["models"][0]["name"], "server_model");
  ASSERT_EQ(j["problems"].size(), 1u) << j;
  EXPECT_NE(j["problems"][0]["file"].get<std::string>().find("long_path_model.yaml"), std::string::npos);
}

// ---- 6. no file behind a download ----------------------------------------------------------------------------

TEST_F(ServerAttacks, TraceDownloadsWriteNoFileALocalUserCouldRedirect) {
  const auto id = seed_evaluation();
  start(options());
  // Links where the server used to write its downloads (/tmp/xsp-serve-PID-N.EXT), all to one victim file.
  const auto victim = outside_ / "victim.txt";
  { std::ofstream(victim) << "untouched"; }
  std::vector<std::filesystem::path> planted;
  for (int n = 0; n < 6; ++n)
    for (const char* ext : {".json", ".otlp.json", ".sqlite"}) {
      const auto link = std::filesystem::temp_directory_path() /
                        ("xsp-serve-" + std::to_string(::getpid()) + "-" + std::to_string(n) + ext);
      std::error_code ec;
      std::filesystem::remove(link, ec);
      std::filesystem::create_symlink(victim, link);
      planted.push_back(link);
    }
  auto c = client();
  const std::string base = "/api/v1/evaluations/" + std::to_string(id) + "/trace?run=2&format=";
  const auto chrome = c.Get(base + "chrome");
  ASSERT_EQ(chrome->status, 200);
  EXPECT_FALSE(json::parse(chrome->body)["traceEvents"].empty());
  const auto otlp = c.Get(base + "otlp");
  ASSERT_EQ(otlp->status, 200);
  EXPECT_TRUE(json::parse(otlp->body).contains("resourceSpans"));
  const auto sqlite = c.Get(base + "sqlite");
  ASSERT_EQ(sqlite->status, 200);
  EXPECT_EQ(sqlite->body.substr(0, 16), std::string("SQLite format 3\0", 16));
  EXPECT_GT(sqlite->body.size(), 4096u);
  std::ifstream in(victim);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "untouched");
  for (const auto& link : planted) std::filesystem::remove(link);
}

// ---- 7. client errors are 400s ------------------------------------------------------------------------------

TEST_F(ServerAttacks, MalformedBodiesAre400sNot500s) {
  start(options());
  auto c = client();
  auto bad = [&](const std::string& text, int status, const std::string& field) {
    const auto r = c.Post("/api/v1/evaluations", text, "application/json");
    const std::string m = expect_error(r, status, field);
    EXPECT_EQ(m.find("internal error"), std::string::npos) << m;
    return m;
  };
  bad("{\"model\": \"\xff\xfe\"}", 400, "body");  // invalid UTF-8
  EXPECT_NE(bad("{\"model\": \"server_model\", \"leveled\": 1e400}", 400, "body").find("1e400"), std::string::npos);
  bad("{\"modle\": \"server_model\"}", 400, "modle");  // an unknown key
  json r = testing::quick_request();
  r["inputs"]["synthetc"] = true;
  bad(r.dump(), 400, "inputs.synthetc");
  r = testing::quick_request();
  r["device_index"] = 2.5;
  bad(r.dump(), 400, "device_index");
  r = testing::quick_request();
  r["seed"] = 1;  // seed lives under inputs
  bad(json{{"request", r}}.dump(), 400, "request.seed");
  // Invalid UTF-8 echoed into an error message is replaced, not a 500.
  const auto id = c.Get("/api/v1/evaluations/%FF%FE");
  expect_error(id, 400, "id");
}

// ---- 9. validation before queueing -------------------------------------------------------------------------

TEST(RequestFields, SubmissionsAreCheckedOnTheirFaceBeforeTheyAreQueued) {
  json r = testing::quick_request();
  r["batch_sizes"] = {0};
  try {
    (void)job_submission_from_json(json{{"request", r}});
    FAIL() << "batch size 0 was accepted";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.field(), "request.batch_sizes");
  }
  r = testing::quick_request();
  r["scenario"] = {{"scenario", "sometimes"}};
  EXPECT_THROW((void)job_submission_from_json(r), RequestError);
  EXPECT_NO_THROW((void)job_submission_from_json(testing::quick_request()));
  // The fuzzer's seeds (fuzz/fuzz_request.cc) are submissions that pass.
  for (const auto& e : std::filesystem::directory_iterator(std::string(XSP_TEST_FIXTURES) + "/requests")) {
    std::ifstream in(e.path());
    EXPECT_NO_THROW((void)job_submission_from_json(json::parse(in))) << e.path();
  }
}

}  // namespace
}  // namespace xsp
