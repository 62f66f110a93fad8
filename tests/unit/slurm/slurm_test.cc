// The Slurm engine's parts that need no Slurm: squeue's JSON as Slurm 22.05 (Debian 12) prints it, the state map,
// the batch script (checked by bash itself and run for one task), sbatch's arguments, and the Kubernetes manifest
// (parsed back with yaml-cpp and held to batch/v1 Job's required structure). The engine against a real Slurm is
// tests/slurm/slurm_test.sh.
#include "xsp/queue/slurm.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>

namespace xsp::slurm {
namespace {

namespace fs = std::filesystem;

nlohmann::json fixture(const std::string& name) {
  std::ifstream in(std::string(XSP_TEST_FIXTURES) + "/slurm/" + name);
  return nlohmann::json::parse(in);
}

TEST(SlurmTaskString, ExpandsRangesListsStepsAndDropsTheThrottle) {
  EXPECT_EQ(expand_task_string("3-5%3"), (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(expand_task_string("1,3,7-11:2"), (std::vector<int>{1, 3, 7, 9, 11}));
  EXPECT_EQ(expand_task_string("0"), (std::vector<int>{0}));
  EXPECT_THROW(expand_task_string("x"), std::invalid_argument);
  EXPECT_THROW(expand_task_string("5-3"), std::invalid_argument);
}

// Recorded from Debian 12's Slurm 22.05: array 9 (--array=0-5%3, --time=1) with task 1 exited 3, tasks 0 and 2
// running and 3-5 pending on Resources, still one record "3-5%3".
TEST(SlurmSqueue, ReadsEveryTaskOfARealSlurm2205Array) {
  const auto tasks = parse_squeue_json(fixture("squeue-22.05-running.json"));
  std::map<int, TaskStatus> by_task;
  for (const TaskStatus& t : tasks) {
    EXPECT_EQ(t.array_job_id, 9);
    by_task[t.task] = t;
  }
  ASSERT_EQ(by_task.size(), 6u);
  EXPECT_EQ(by_task[0].state, "RUNNING");
  EXPECT_EQ(by_task[0].job_id, 10);
  EXPECT_EQ(by_task[0].node, "vm");
  EXPECT_EQ(by_task[1].state, "FAILED");
  EXPECT_EQ(by_task[1].reason, "NonZeroExitCode");
  EXPECT_EQ(by_task[1].exit_code, 3);  // wait status 768
  EXPECT_EQ(by_task[1].signal, 0);
  EXPECT_EQ(by_task[2].state, "RUNNING");
  for (int i : {3, 4, 5}) {
    EXPECT_EQ(by_task[i].state, "PENDING") << i;
    EXPECT_EQ(by_task[i].reason, "Resources") << i;
    EXPECT_EQ(by_task[i].job_id, 9) << i;  // not split off yet: the array's own id
  }
  EXPECT_EQ(map_state(by_task[3]).state, JobState::kQueued);
  EXPECT_EQ(map_state(by_task[3]).reason, "pending: Resources");
}

TEST(SlurmSqueue, RefusesADocumentWithoutJobs) {
  EXPECT_THROW(parse_squeue_json(nlohmann::json::object()), std::runtime_error);
  EXPECT_THROW(parse_squeue_json(nlohmann::json{{"jobs", 3}}), std::runtime_error);
}

TEST(SlurmSacct, ReadsArrayTasksAndExitCodes) {
  const nlohmann::json doc = {
      {"jobs",
       {{{"job_id", 41},
         {"array", {{"job_id", 40}, {"task_id", 1}}},
         {"state", {{"current", "TIMEOUT"}, {"reason", "None"}}},
         {"exit_code", {{"status", "SIGNALED"}, {"return_code", 0}, {"signal", {{"signal_id", 15}}}}},
         {"nodes", "gpu07"},
         {"time", {{"submission", 100}, {"start", 110}, {"end", 170}}}},
        {{"job_id", 42}, {"array", {{"job_id", 0}, {"task_id", nullptr}}}, {"state", {{"current", "COMPLETED"}}}}}}};
  const auto tasks = parse_sacct_json(doc);
  ASSERT_EQ(tasks.size(), 1u);  // job 42 is no array task
  EXPECT_EQ(tasks[0].array_job_id, 40);
  EXPECT_EQ(tasks[0].task, 1);
  EXPECT_EQ(tasks[0].state, "TIMEOUT");
  EXPECT_EQ(tasks[0].signal, 15);
  EXPECT_EQ(tasks[0].end_time, 170);
  EXPECT_EQ(map_state(tasks[0]).state, JobState::kFailed);
}

TaskStatus status(const std::string& state, int exit_code = 0, int signal = 0, std::string reason = "None") {
  TaskStatus s;
  s.state = state;
  s.exit_code = exit_code;
  s.signal = signal;
  s.reason = std::move(reason);
  s.node = "n1";
  return s;
}

TEST(SlurmStates, MapOntoXspStatesWithReasonsAndRetries) {
  struct Case {
    TaskStatus s;
    JobState state;
    bool retryable;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {status("PENDING", 0, 0, "JobArrayTaskLimit"), JobState::kQueued, false, "pending: JobArrayTaskLimit"},
      {status("PENDING"), JobState::kQueued, false, ""},
      {[] {
         TaskStatus s = status("PENDING", 0, 0, "BeginTime");
         s.restarts = 1;  // as squeue showed a task whose node was set down mid-run (Slurm 22.05)
         return s;
       }(),
       JobState::kQueued, false, "requeued by Slurm after restart 1 (node failure or preemption); pending: BeginTime"},
      {status("REQUEUED"), JobState::kQueued, false, "requeued by Slurm, restarts 0"},
      {status("RUNNING"), JobState::kRunning, false, ""},
      {status("COMPLETING"), JobState::kRunning, false, "Slurm: COMPLETING"},
      {status("COMPLETED"), JobState::kDone, false, ""},
      {status("CANCELLED by 0"), JobState::kCancelled, false, "cancelled (scancel)"},
      {status("FAILED", 3, 0, "NonZeroExitCode"), JobState::kFailed, true, "exit code 3 on n1"},
      {status("FAILED", 2), JobState::kFailed, false, "exit code 2 (usage error: not retried) on n1"},
      {status("FAILED", 0, 9, "JobLaunchFailure"), JobState::kFailed, true, "killed by signal 9 on n1"},
      {status("TIMEOUT"), JobState::kFailed, true, "over its time limit (TIMEOUT) on n1"},
      {status("NODE_FAIL"), JobState::kFailed, true, "its node failed (NODE_FAIL) on n1"},
      {status("PREEMPTED"), JobState::kFailed, true, "preempted (PREEMPTED) on n1"},
      {status("OUT_OF_MEMORY"), JobState::kFailed, false,
       "out of memory (OUT_OF_MEMORY) on n1: ask for more with --mem"},
      {status("BOGUS"), JobState::kFailed, false, "unknown Slurm state 'BOGUS'"},
  };
  for (const Case& c : cases) {
    const MappedState m = map_state(c.s);
    EXPECT_EQ(m.state, c.state) << c.s.state;
    EXPECT_EQ(m.retryable, c.retryable) << c.s.state;
    EXPECT_EQ(m.reason, c.reason) << c.s.state;
  }
}

TEST(SlurmArray, SpecHasTheThrottleOnlyWhenItLimits) {
  EXPECT_EQ(array_spec(30, 4), "0-29%4");
  EXPECT_EQ(array_spec(3, 0), "0-2");
  EXPECT_EQ(array_spec(3, 5), "0-2");
  EXPECT_EQ(array_spec(1, 1), "0-0");
  EXPECT_THROW(array_spec(0, 1), std::invalid_argument);
}

TEST(SlurmArray, SbatchGetsTheDependencyOnlyTheFirstTime) {
  ArrayOptions o;
  o.dependency = "afterok:12";
  EXPECT_EQ(
      sbatch_argv(o, "/d/job.sh", "0-2%2", true),
      (std::vector<std::string>{"sbatch", "--parsable", "--array=0-2%2", "--dependency=afterok:12", "/d/job.sh"}));
  EXPECT_EQ(sbatch_argv(o, "/d/job.sh", "1", false),
            (std::vector<std::string>{"sbatch", "--parsable", "--array=1", "/d/job.sh"}));
}

class SlurmScript : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xsp-slurm-script-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(SlurmScript, IsValidBashCarriesTheOptionsAndRunsTheTaskOfItsIndex) {
  ArrayOptions o;
  o.partition = "gpu";
  o.gres = "gpu:h100:1";
  o.time = "00:30:00";
  o.dependency = "afterok:7";
  o.max_concurrent = 2;
  o.sbatch_args = {"--container-image=nvcr.io#nvidia/pytorch:24.05-py3"};
  // Task 1 "evaluates" by printing what `xsp evaluate` prints; `xsp label` is /bin/true.
  const std::vector<TaskSpec> tasks = {
      {"a", {}, {"/bin/echo", "never"}},
      {"b b", {}, {"/bin/echo", "stored as evaluation 42 in it's store; see: xsp show 42"}},
      {"c", {}, {"/bin/false"}}};
  const std::string script = batch_script(o, tasks, dir_, "/bin/true", "postgresql://u@h/db", "/zoo");
  for (const char* line :
       {"#SBATCH --partition=gpu\n", "#SBATCH --gres=gpu:h100:1\n", "#SBATCH --time=00:30:00\n",
        "#SBATCH --job-name=xsp\n", "#SBATCH --container-image=nvcr.io#nvidia/pytorch:24.05-py3\n",
        "export XSP_STORE=postgresql://u@h/db\n", "#   sbatch --array=0-2%2 --dependency=afterok:7 "})
    EXPECT_NE(script.find(line), std::string::npos) << line << " in\n" << script;
  EXPECT_EQ(script.find("#SBATCH --dependency"), std::string::npos) << "a resubmitted task must not wait again";
  std::ofstream(dir_ / "job.sh") << script;
  const ProcessResult syntax = run_process({"bash", "-n", (dir_ / "job.sh").string()}, std::chrono::seconds(10));
  EXPECT_EQ(syntax.exit_code, 0) << syntax.err;

  ::setenv("SLURM_ARRAY_TASK_ID", "1", 1);
  ::setenv("SLURM_ARRAY_JOB_ID", "77", 1);
  ::setenv("SLURM_JOB_ID", "79", 1);
  const ProcessResult run = run_process({"bash", (dir_ / "job.sh").string()}, std::chrono::seconds(10));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("stored as evaluation 42 in it's store"), std::string::npos) << run.out;
  std::ifstream result(dir_ / "result-1.json");
  ASSERT_TRUE(result) << "the task left no result file";
  const nlohmann::json r = nlohmann::json::parse(result);
  EXPECT_EQ(r["evaluation_id"], 42);
  EXPECT_EQ(r["array_job_id"], 77);
  EXPECT_EQ(r["task"], 1);
  EXPECT_EQ(r["job_id"], 79);

  ::setenv("SLURM_ARRAY_TASK_ID", "2", 1);
  const ProcessResult failed = run_process({"bash", (dir_ / "job.sh").string()}, std::chrono::seconds(10));
  EXPECT_EQ(failed.exit_code, 1) << "the task's exit status is the evaluation's";
  EXPECT_FALSE(fs::exists(dir_ / "result-2.json"));

  ::setenv("SLURM_ARRAY_TASK_ID", "3", 1);
  const ProcessResult none = run_process({"bash", (dir_ / "job.sh").string()}, std::chrono::seconds(10));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("tasks 0-2, not 3"), std::string::npos) << none.err;
}

TEST(SlurmProcess, KillsAChildPastItsTimeoutAndSaysWhenACommandIsMissing) {
  const auto start = std::chrono::steady_clock::now();
  const ProcessResult r = run_process({"sleep", "30"}, std::chrono::milliseconds(200));
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, 9);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_THROW(run_process({"no-such-command-xsp"}, std::chrono::seconds(1)), std::runtime_error);
}

TEST(SlurmTime, ReadsSlurmsFormats) {
  EXPECT_EQ(parse_slurm_time("30"), 1800);
  EXPECT_EQ(parse_slurm_time("5:30"), 330);
  EXPECT_EQ(parse_slurm_time("00:30:00"), 1800);
  EXPECT_EQ(parse_slurm_time("1-02"), 93600);
  EXPECT_EQ(parse_slurm_time("1-02:00:30"), 93630);
  EXPECT_THROW(parse_slurm_time("half an hour"), std::invalid_argument);
  EXPECT_THROW(parse_slurm_time(""), std::invalid_argument);
}

// batch/v1 Job: apiVersion, kind, metadata.name, spec.template.spec.containers[] with name and image each, and a
// restartPolicy of Never or OnFailure; Indexed completion needs spec.completions.
TEST(K8sManifest, IsAnIndexedJobWithOnePodPerTaskAndGpuRequests) {
  K8sOptions o;
  o.name = "sweep-1";
  o.image = "registry.example/xsp:1.0";
  o.gpus = 2;
  o.parallelism = 2;
  o.max_attempts = 3;
  o.time = "00:10:00";
  const std::vector<TaskSpec> tasks = {{"a", {}, {"/bin/echo", "task zero"}},
                                       {"b", {}, {"/bin/echo", "task one"}},
                                       {"c", {}, {"/bin/echo", "task two"}}};
  const YAML::Node job = YAML::Load(k8s_manifest(o, tasks));
  EXPECT_EQ(job["apiVersion"].as<std::string>(), "batch/v1");
  EXPECT_EQ(job["kind"].as<std::string>(), "Job");
  EXPECT_EQ(job["metadata"]["name"].as<std::string>(), "sweep-1");
  const YAML::Node spec = job["spec"];
  EXPECT_EQ(spec["completionMode"].as<std::string>(), "Indexed");
  EXPECT_EQ(spec["completions"].as<int>(), 3);
  EXPECT_EQ(spec["parallelism"].as<int>(), 2);
  EXPECT_EQ(spec["backoffLimit"].as<int>(), 6);
  EXPECT_EQ(spec["activeDeadlineSeconds"].as<int>(), 1200);  // two waves of 10 minutes
  const YAML::Node pod = spec["template"]["spec"];
  EXPECT_EQ(pod["restartPolicy"].as<std::string>(), "Never");
  ASSERT_TRUE(pod["containers"].IsSequence());
  ASSERT_EQ(pod["containers"].size(), 1u);
  const YAML::Node c = pod["containers"][0];
  EXPECT_EQ(c["name"].as<std::string>(), "xsp");
  EXPECT_EQ(c["image"].as<std::string>(), "registry.example/xsp:1.0");
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"].as<int>(), 2);
  EXPECT_EQ(c["env"][0]["name"].as<std::string>(), "XSP_STORE");
  EXPECT_EQ(c["env"][0]["valueFrom"]["secretKeyRef"]["name"].as<std::string>(), "xsp-store");
  EXPECT_EQ(c["env"][0]["valueFrom"]["secretKeyRef"]["key"].as<std::string>(), "url");
  // The pod's command, run as the Job controller would for index 1, runs task 1.
  const auto command = c["command"].as<std::vector<std::string>>();
  ASSERT_EQ(command.size(), 3u);
  EXPECT_EQ(command[0], "/bin/sh");
  EXPECT_EQ(command[1], "-c");
  ::setenv("JOB_COMPLETION_INDEX", "1", 1);
  const ProcessResult r = run_process(command, std::chrono::seconds(10));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "task one\n");
  ::setenv("JOB_COMPLETION_INDEX", "3", 1);
  EXPECT_EQ(run_process(command, std::chrono::seconds(10)).exit_code, 2);
}

TEST(K8sManifest, NamesTheOptionThatIsWrong) {
  const std::vector<TaskSpec> tasks = {{"a", {}, {"xsp", "evaluate", "a"}}};
  K8sOptions o;
  auto message = [&] {
    try {
      k8s_manifest(o, tasks);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message().rfind("image:", 0), 0u) << message();
  o.image = "x";
  o.name = "Not_A_Label";
  EXPECT_EQ(message().rfind("name:", 0), 0u) << message();
  o.name = "ok";
  o.time = "soon";
  EXPECT_EQ(message().rfind("time:", 0), 0u) << message();
  EXPECT_THROW(k8s_manifest(o, {}), std::invalid_argument);
}

}  // namespace
}  // namespace xsp::slurm

namespace xsp::slurm {
namespace {

// The same array once over, from the same Slurm: task 2 ran past --time=1 (TIMEOUT, SIGTERM), task 3 killed itself
// with SIGKILL (FAILED, JobLaunchFailure), task 5 was cancelled while pending (gone from squeue: not listed).
TEST(SlurmSqueue, ReadsHowARealSlurm2205ArrayEnded) {
  std::map<int, TaskStatus> by_task;
  for (const TaskStatus& t : parse_squeue_json(fixture("squeue-22.05-finished.json"))) by_task[t.task] = t;
  ASSERT_EQ(by_task.size(), 5u);
  EXPECT_EQ(map_state(by_task[0]).state, JobState::kDone);
  EXPECT_EQ(map_state(by_task[1]).reason, "exit code 3 on vm");
  EXPECT_EQ(by_task[2].state, "TIMEOUT");
  EXPECT_EQ(by_task[2].signal, 15);
  EXPECT_EQ(by_task[2].end_time - by_task[2].start_time, 86);
  EXPECT_EQ(map_state(by_task[2]).reason, "over its time limit (TIMEOUT) on vm");
  EXPECT_TRUE(map_state(by_task[2]).retryable);
  EXPECT_EQ(map_state(by_task[3]).reason, "killed by signal 9 on vm");
  EXPECT_EQ(map_state(by_task[4]).state, JobState::kDone);
  EXPECT_EQ(by_task.count(5), 0u);
}

}  // namespace
}  // namespace xsp::slurm
