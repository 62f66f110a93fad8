// open_job_service(): the job service of a store location (include/xsp/queue/postgres_queue.h); and, in a build
// without PostgreSQL, run_agent() saying so (the agent loop lives in src/queue/postgres/, built with libpqxx).
#include <stdexcept>

#include "xsp/queue/agent.h"
#include "xsp/queue/postgres_queue.h"
#include "xsp/store/store.h"

namespace xsp {

std::unique_ptr<JobService> open_job_service(const std::string& location) {
  if (!is_postgres_location(location))
    throw std::invalid_argument("--store " + location +
                                ": submitted jobs and agents need a shared PostgreSQL store (--store "
                                "postgresql://USER@HOST/DATABASE, docs/deploy.md); on an SQLite store run "
                                "`xsp evaluate`, or `xsp serve`, which runs submissions itself");
#ifdef XSP_WITH_POSTGRES
  return PostgresJobQueue::open(location);
#else
  throw std::invalid_argument("--store " + redact_location(location) +
                              ": this build of XSP has no PostgreSQL support (install libpqxx-dev, e.g. with "
                              "scripts/install-deps.sh, and rebuild)");
#endif
}

#ifndef XSP_WITH_POSTGRES
AgentSummary run_agent(const AgentOptions& options) {
  throw StoreError("xsp agent: --store " + redact_location(options.store) +
                   ": this build of XSP has no PostgreSQL support, and agents take their jobs from a PostgreSQL store "
                   "(install libpqxx-dev, e.g. with scripts/install-deps.sh, and rebuild)");
}
#endif

}  // namespace xsp
