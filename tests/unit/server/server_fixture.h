// The server in-process for the tests of this folder: a fake framework ("server-fake") on a fake clock, a one-model
// zoo, a store in a fresh temporary folder with evaluations made through the library, and the server on 127.0.0.1
// at a free port.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "../cli/fake_zoo.h"
#include "../eval/fake_model.h"
#include "xsp/eval/evaluate.h"
#include "xsp/server/server.h"
#include "xsp/store/store.h"

namespace xsp::testing {

/// Set by a test: when true, the first batch of size 2 waits (g_blocked = true) until g_release is true, so that a
/// test can act while an evaluation is known to be running.
inline std::atomic<bool> g_block_at_batch_2{false};
inline std::atomic<bool> g_blocked{false};
inline std::atomic<bool> g_release{false};

/// FakePredictor under the framework name "server-fake".
class ServerFakePredictor final : public Predictor {
 public:
  explicit ServerFakePredictor(FakeClock& clock) : inner_(clock, LatencyModel{}) {}
  std::string framework_name() const override { return "server-fake"; }
  std::string framework_version() const override { return "1.0.0"; }
  void load(const Manifest& m, const DeviceSpec& d) override { inner_.load(m, d); }
  Tensor predict(const Tensor& t) override {
    if (g_block_at_batch_2 && !t.shape.empty() && t.shape[0] == 2) {
      g_block_at_batch_2 = false;
      g_blocked = true;
      while (!g_release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return inner_.predict(t);
  }
  void close() override {}
  FrameworkProfiler* framework_profiler() override { return inner_.framework_profiler(); }

 private:
  FakePredictor inner_;
};

/// A request the fake framework runs in a few milliseconds: batch sizes 1 and 2, M and M/F runs.
inline nlohmann::json quick_request() {
  return {{"model", "server_model"},
          {"framework", "server-fake"},
          {"batch_sizes", {1, 2}},
          {"trace_level", "framework"},
          {"leveled", true},
          {"inputs", {{"synthetic", true}}},
          {"measurement", {{"warmup_min_ms", 100}, {"min_duration_ms", 100}}}};
}

class ServerFixture : public ::testing::Test {
 protected:
  static FakeClock& clock() {
    static FakeClock c;
    return c;
  }

  void SetUp() override {
    static const bool registered = [] {
      register_predictor("server-fake", [] { return std::make_unique<ServerFakePredictor>(clock()); });
      return true;
    }();
    (void)registered;
    g_block_at_batch_2 = false;
    g_blocked = false;
    g_release = false;
    dir_ = std::filesystem::temp_directory_path() / ("xsp-server-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    write_fake_zoo(dir_ / "zoo", "server_model", "server-fake");
  }

  void TearDown() override {
    g_release = true;  // never leave the worker waiting
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  /// Saves an evaluation through the library (not the server) and returns its id.
  std::int64_t seed_evaluation() {
    auto store = Store::open(dir_ / "s.db");
    EvaluationContext c;
    c.zoo = dir_ / "zoo";
    c.store = store.get();
    c.clock = &clock();
    c.record_machine_state = false;
    return evaluate(evaluation_request_from_json(quick_request()), c).id;
  }

  ServerOptions options() {
    ServerOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.store = dir_ / "s.db";
    o.zoo = dir_ / "zoo";
    o.clock = &clock();
    o.record_machine_state = false;
    return o;
  }

  void start(ServerOptions o) {
    server_ = std::make_unique<Server>(std::move(o));
    server_->start();
  }
  void start() { start(options()); }

  httplib::Client client() const {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(30, 0);
    return c;
  }

  /// The JSON body of a response, or a test failure naming the body.
  static nlohmann::json body(const httplib::Result& r) {
    EXPECT_TRUE(r) << "no response: " << httplib::to_string(r.error());
    if (!r) return nullptr;
    try {
      return nlohmann::json::parse(r->body);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not JSON: " << r->body;
      return nullptr;
    }
  }

  /// Waits (at most 60 s) until job `id` has finished; returns its JSON.
  nlohmann::json wait_for_job(std::int64_t id) {
    auto c = client();
    for (int i = 0; i < 6000; ++i) {
      const auto j = body(c.Get("/api/v1/jobs/" + std::to_string(id)));
      const std::string state = j["job"]["state"];
      if (state != "queued" && state != "running") return j["job"];
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "job " << id << " did not finish in 60 s";
    return nullptr;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Server> server_;
};

}  // namespace xsp::testing
