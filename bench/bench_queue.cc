// The PostgreSQL job queue under load (include/xsp/queue/postgres_queue.h): null jobs, each claimed and completed
// with a one-run result (so a job costs a claim transaction and a publishing transaction, and no evaluation).
//   1. throughput: JOBS queued jobs drained by 1, 2, 4 and 8 agent threads (each with its own connections, as agents
//      on separate machines have), REPEATS times each; jobs/s and claim latency per configuration;
//   2. a deep queue: 100,000 queued jobs; the claim's plan (EXPLAIN ANALYZE: the jobs_claim index or a scan) and its
//      latency over 200 claims, first when every job is claimable, then when 100,000 jobs no agent can run are ahead
//      of 200 it can.
// Usage: tests/pg/pg_cluster.sh run build/bench/bench_queue [JOBS] [REPEATS] [DEEP]  (XSP_TEST_PG_URL names the
// server's maintenance database; the bench makes and drops database xsp_bench_queue).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <pqxx/pqxx>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../tests/unit/pg/pg_url.h"
#include "../tests/unit/store/minimal_record.h"
#include "xsp/queue/postgres_queue.h"
#include "xsp/stats/stats.h"

using namespace xsp;
using SteadyClock = std::chrono::steady_clock;

namespace {

AgentCapabilities cpu_agent() {
  AgentCapabilities c;
  c.hostname = "bench";
  c.frameworks = {{"libtorch", "2.11.0"}};
  return c;
}

double ms_since(SteadyClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
}

void exec(const std::string& url, const std::string& sql) {
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  tx.exec(sql);
}

std::int64_t scalar(const std::string& url, const std::string& sql) {
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  return tx.exec1(sql)[0].as<std::int64_t>();
}

void summarize(const char* what, std::vector<double> v, const char* unit) {
  std::sort(v.begin(), v.end());
  std::printf("  %-22s median %10.3f %s  range %.3f–%.3f  (n=%zu)\n", what, percentile(v, 50), unit, v.front(),
              v.back(), v.size());
}

// Drains the queue with `agents` threads; returns jobs/s and appends each claim's latency (ms).
double drain(const std::string& url, int agents, int jobs, std::vector<double>& claim_ms) {
  std::vector<std::vector<double>> per_agent(agents);
  std::vector<std::unique_ptr<PostgresJobQueue>> queues;
  std::vector<std::string> ids;
  for (int a = 0; a < agents; ++a) {
    queues.push_back(PostgresJobQueue::open(url));
    ids.push_back(queues.back()->register_agent("bench" + std::to_string(a), cpu_agent(), nlohmann::json::object()));
  }
  std::vector<int> done(agents, 0);
  const auto t0 = SteadyClock::now();
  std::vector<std::thread> threads;
  for (int a = 0; a < agents; ++a) {
    threads.emplace_back([&, a] {
      while (true) {
        const auto c0 = SteadyClock::now();
        auto job = queues[a]->claim(ids[a], cpu_agent());
        per_agent[a].push_back(ms_since(c0));
        if (!job) break;
        EvaluationRecord r = testing::minimal_record(job->request.model);
        if (queues[a]->complete(ids[a], job->id, r)) ++done[a];
      }
    });
  }
  for (auto& t : threads) t.join();
  const double seconds = ms_since(t0) / 1000;
  int total = 0;
  for (int d : done) total += d;
  if (total != jobs) {
    std::fprintf(stderr, "bench_queue: %d of %d jobs done\n", total, jobs);
    std::exit(1);
  }
  for (auto& v : per_agent) claim_ms.insert(claim_ms.end(), v.begin(), v.end());
  return jobs / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const char* admin = std::getenv("XSP_TEST_PG_URL");
  if (admin == nullptr) {
    std::fprintf(stderr, "bench_queue: XSP_TEST_PG_URL is not set: run it under tests/pg/pg_cluster.sh run\n");
    return 2;
  }
  const int jobs = argc > 1 ? std::atoi(argv[1]) : 500;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  const int deep = argc > 3 ? std::atoi(argv[3]) : 100'000;
  exec(admin, "DROP DATABASE IF EXISTS xsp_bench_queue");
  exec(admin, "CREATE DATABASE xsp_bench_queue");
  const std::string url = testing::pg_url_for(admin, "xsp_bench_queue");
  auto submitter = PostgresJobQueue::open(url);
  JobSubmission s;
  s.request.model = "null";
  s.request.framework = "libtorch";
  s.constraints = constraints_for(s.request);
  const std::string reset = "TRUNCATE jobs, job_attempts, agents, evaluations CASCADE";

  std::printf("1. throughput: %d null jobs per repeat, %d repeats\n", jobs, repeats);
  std::vector<double> submit_ms;
  for (int agents : {1, 2, 4, 8}) {
    std::vector<double> rate, claims;
    for (int r = 0; r < repeats; ++r) {
      exec(url, reset);
      for (int i = 0; i < jobs; ++i) {
        const auto t0 = SteadyClock::now();
        submitter->submit(s);
        submit_ms.push_back(ms_since(t0));
      }
      rate.push_back(drain(url, agents, jobs, claims));
    }
    std::printf(" %d agent(s)\n", agents);
    summarize("jobs/s", rate, "");
    summarize("claim latency", claims, "ms");
    std::vector<double> sorted = claims;
    std::sort(sorted.begin(), sorted.end());
    std::printf("  %-22s %.3f ms\n", "claim p99 (pooled)", percentile(sorted, 99));
  }
  summarize("submit latency", submit_ms, "ms");

  std::printf("2. deep queue: %d queued jobs\n", deep);
  auto deep_case = [&](const std::string& label, bool blocked_ahead) {
    exec(url, reset);
    submitter->submit(s);  // one real submission: its request text is copied into the bulk rows
    if (blocked_ahead) {
      // Jobs no CPU agent can run, at a higher priority: the claim's index scan must step over all of them.
      exec(url,
           "INSERT INTO jobs (request, model, priority, framework, device, gpu_pattern, gpu_like, max_attempts) "
           "SELECT request, model, 1, framework, 'cuda', '*H100*', '%H100%', 3 FROM jobs, generate_series(1, " +
               std::to_string(deep) + ")");
    } else {
      exec(url,
           "INSERT INTO jobs (request, model, framework, device, max_attempts) "
           "SELECT request, model, framework, device, 3 FROM jobs, generate_series(1, " +
               std::to_string(deep - 1) + ")");
    }
    if (blocked_ahead) {
      exec(url,
           "INSERT INTO jobs (request, model, framework, device, max_attempts) "
           "SELECT j.request, j.model, j.framework, 'cpu', 3 FROM (SELECT * FROM jobs WHERE priority = 0) j, "
           "generate_series(1, 199)");
    }
    exec(url, "ANALYZE jobs");
    auto q = PostgresJobQueue::open(url);
    const std::string agent = q->register_agent("deep", cpu_agent(), nlohmann::json::object());
    std::printf(" %s: %lld queued\n  the claim's plan (EXPLAIN ANALYZE, first claim):\n", label.c_str(),
                static_cast<long long>(scalar(url, "SELECT count(*) FROM jobs WHERE state = 'queued'")));
    std::istringstream plan(q->explain_claim(cpu_agent()));
    for (std::string line; std::getline(plan, line);) std::printf("    %s\n", line.c_str());
    std::vector<double> claims;
    for (int i = 0; i < 200; ++i) {
      const auto t0 = SteadyClock::now();
      auto job = q->claim(agent, cpu_agent());
      claims.push_back(ms_since(t0));
      if (!job) break;
      EvaluationRecord r = testing::minimal_record("null");
      q->complete(agent, job->id, r);
    }
    summarize("claim latency", claims, "ms");
  };
  deep_case("every job claimable", false);
  deep_case(std::to_string(deep) + " jobs ahead that no agent can run (they need an H100)", true);
  submitter.reset();
  exec(admin, "DROP DATABASE IF EXISTS xsp_bench_queue WITH (FORCE)");
  return 0;
}
