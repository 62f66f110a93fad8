// The `xsp` application: global options, the commands, the help text's environment table, error mapping.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>
#include <set>

#include "common.h"
#include "usage.h"
#include "xsp/pipeline/tokenizer.h"
#include "xsp/predictor/predictor.h"
#include "xsp/profilers/device_profiler.h"
#include "xsp/profilers/profiler_options.h"
#include "xsp/service/service.h"
#include "xsp/store/store.h"
#include "xsp/system/system_info.h"
#ifdef XSP_WITH_LIBTORCH
#include "xsp/predictors/libtorch.h"
#endif
#ifdef XSP_WITH_AOTINDUCTOR
#include "xsp/predictors/aotinductor.h"
#endif
#ifdef XSP_WITH_OPENCV_DNN
#include "xsp/predictors/opencv_dnn.h"
#endif
#ifdef XSP_WITH_ONNXRUNTIME
#include "xsp/predictors/onnxruntime.h"
#endif

namespace xsp::cli {
namespace {

// --help lists every environment variable XSP reads, from the one table (xsp/profilers/profiler_options.h).
std::string environment_help() {
  std::string out = "Environment (each overrides a default; the flag wins over it):\n";
  for (const EnvOverride& e : env_overrides())
    out += "  " + e.variable + std::string(e.variable.size() < 30 ? 30 - e.variable.size() : 1, ' ') + e.flag + "\n";
  return out;
}

// CLI11 appends "Needs: --x" and "Excludes: --y" to an option's name column, where they run into the
// description; this formatter moves them onto lines of their own under the description.
class Formatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* opt) const override {
    std::string opts = CLI::Formatter::make_option_opts(opt);
    const std::size_t cut =
        std::min(opts.find(" " + get_label("Needs") + ":"), opts.find(" " + get_label("Excludes") + ":"));
    return cut == std::string::npos ? opts : opts.substr(0, cut);
  }
  std::string make_option_desc(const CLI::Option* opt) const override {
    std::string desc = CLI::Formatter::make_option_desc(opt);
    auto names = [](const std::set<CLI::Option*>& options) {
      std::string out;
      for (const CLI::Option* o : options) out += " " + o->get_name();
      return out;
    };
    if (!opt->get_needs().empty())
      desc += (desc.empty() ? "" : "\n") + get_label("Needs") + ":" + names(opt->get_needs());
    if (!opt->get_excludes().empty())
      desc += (desc.empty() ? "" : "\n") + get_label("Excludes") + ":" + names(opt->get_excludes());
    return desc;
  }
};

void register_predictors() {
  static const bool once = [] {
#ifdef XSP_WITH_LIBTORCH
    register_libtorch_predictor();
#endif
#ifdef XSP_WITH_AOTINDUCTOR
    register_aotinductor_predictor();
#else
    register_unavailable_predictor("aotinductor",
#ifdef XSP_AOTI_OFF_TORCH_VERSION
                                   "it needs LibTorch >= 2.6 (torch::inductor::AOTIModelPackageLoader) and this "
                                   "build's LibTorch is " XSP_AOTI_OFF_TORCH_VERSION
#else
                                   "it needs LibTorch >= 2.6 and this build has no LibTorch"
#endif
                                   "; build against PyTorch's own LibTorch (scripts/gpu-build.sh)");
#endif
#ifdef XSP_WITH_OPENCV_DNN
    register_opencv_dnn_predictor();
#endif
#ifdef XSP_WITH_ONNXRUNTIME
    register_onnxruntime_predictor();
#endif
    return true;
  }();
  (void)once;
}

// `xsp --version`: the version and what this build can measure with.
std::string version_text() {
  register_predictors();
  std::string predictors;
  for (const std::string& p : registered_predictors()) predictors += (predictors.empty() ? "" : ", ") + p;
  std::string out = "xsp " + xsp_version();
  if (const std::string rev = xsp_git_revision(); !rev.empty() && rev != "unknown") out += " (git " + rev + ")";
  out += "\npredictors: " + (predictors.empty() ? std::string("none") : predictors);
  out += "\nprofilers: model, framework (per predictor)";
  out += have_device_profiler() ? ", device (CUPTI), hardware counters (CUPTI)"
                                : "; no device profiler (built without CUPTI)";
  out += "\nstores: SQLite";
  out += have_postgres_store() ? ", PostgreSQL" : " (built without PostgreSQL)";
  out += "\ntokenizer: ";
  out += have_tokenizer() ? "SentencePiece" : "none (built without SentencePiece)";
  return out;
}

int run(int argc, const char* const* argv, const CliEnvironment& env) {
  CLI::App app{"XSP: across-stack profiling and benchmarking of ML models"};
  app.formatter(std::make_shared<Formatter>());  // before the subcommands, which copy it
  app.require_subcommand(1);
  // Global options are accepted before or after the command name ("xsp list --store f.db").
  app.fallthrough();
  app.footer(environment_help() + "\n" + exit_codes_help());
  Globals g;
  g.env = env;
  g.store_path = default_store().string();
  g.zoo_path = default_zoo().string();
  app.add_option("--store", g.store_path,
                 "results store: an SQLite file, or a shared PostgreSQL database as postgresql://USER@HOST/DB "
                 "(docs/deploy.md); env XSP_STORE")
      ->capture_default_str();
  app.add_option("--zoo", g.zoo_path, "model-zoo folder of manifests; env XSP_ZOO")->capture_default_str();
  app.set_version_flag("--version", version_text, "print the version and what this build includes, and exit");
  app.add_flag("-v,--verbose", g.verbose,
               "log the measurement's decisions on stderr (warm-up convergence, block size, window verdicts)");
  Commands commands;
  add_models_command(app, g, commands);
  add_evaluate_command(app, g, commands);
  add_list_command(app, g, commands);
  add_show_command(app, g, commands);
  add_analyze_command(app, g, commands);
  add_compare_command(app, g, commands);
  add_machine_command(app, g, commands);
  add_trace_command(app, g, commands);
  add_import_command(app, g, commands);
  add_report_command(app, g, commands);
  add_serve_command(app, g, commands);
  add_profile_command(app, g, commands);
  add_bench_serve_command(app, g, commands);
  add_queue_commands(app, g, commands);
  add_label_command(app, g, commands);
  add_delete_command(app, g, commands);
  check_numeric_options(app);
  std::vector<const char*> own(argv, argv + argc);
  if (const auto dashes = std::find_if(own.begin() + std::min(argc, 1), own.end(),
                                       [](const char* a) { return std::string_view(a) == "--"; });
      dashes != own.end()) {
    g.command_after_dashes.assign(dashes + 1, own.end());
    own.erase(dashes, own.end());
  }
  try {
    app.parse(static_cast<int>(own.size()), own.data());
  } catch (const CLI::ParseError& e) {
    // --help and --version print and exit 0; every other parse error is a usage error, in xsp's format.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    throw CLI::ValidationError(usage_message(app, e, own));
  }
  static auto logger = spdlog::stderr_color_mt("xsp");
  logger->set_pattern("xsp: %l: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(g.verbose ? spdlog::level::debug : spdlog::level::warn);
  register_predictors();
  for (const Command& c : commands) {
    if (!c.app->parsed()) continue;
    if (!c.takes_command && !g.command_after_dashes.empty())
      throw CLI::ValidationError("xsp " + c.app->get_name() +
                                 " takes no command after --; unexpected: " + g.command_after_dashes.front());
    return c.run();
  }
  return 0;
}

}  // namespace

int run_cli(int argc, const char* const* argv, const CliEnvironment& env) {
  // Every error is one line "xsp: error: MESSAGE" on stderr; the exit code says which kind (exit_codes_help()).
  auto report = [](const std::exception& e, int code) {
    std::cerr << "xsp: error: " << e.what() << "\n";
    return code;
  };
  try {
    return run(argc, argv, env);
  } catch (const CLI::Error& e) {
    return report(e, kExitUsage);
  } catch (const service::RunNotFound& e) {  // --run/--batch-size/--trace-level name no run: a usage error
    return report(e, kExitUsage);
  } catch (const IoError& e) {  // StoreError included
    return report(e, kExitIo);
  } catch (const std::filesystem::filesystem_error& e) {
    return report(e, kExitIo);
  } catch (const std::bad_alloc&) {
    // evaluate() names the request that asked for too much; what is left is reading (a store, a trace, a file) more
    // than this machine holds: say which command, with what it was given.
    std::string args;
    for (int i = 1; i < argc; ++i) args += std::string(" ") + argv[i];
    std::cerr << "xsp: error: out of memory running `xsp" << args << "`: what it reads or builds does not fit in "
              << "this machine's memory\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    return report(e, kExitFailure);
  }
}

}  // namespace xsp::cli
