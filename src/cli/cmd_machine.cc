// xsp machine ceilings | state | describe: facts about this machine (measured GPU ceilings; clocks, throttling, load
// now; its description and capabilities as an agent).
#include <fstream>
#include <iostream>

#include "common.h"
#include "xsp/analysis/roofline.h"
#include "xsp/profilers/ceilings_benchmark.h"
#include "xsp/queue/jobs.h"
#include "xsp/system/machine_state.h"
#include "xsp/system/system_info.h"

namespace xsp::cli {
namespace {

int run_ceilings(const Globals& g, const CeilingOptions& ceiling_options, bool show, bool no_store,
                 const std::string& import_file, const std::string& export_file) {
  std::vector<MachineCeilings> shown;
  if (show) {
    auto store = open_store(g, StoreAccess::kRead);
    shown = store->list_ceilings();
    if (shown.empty())
      std::cout << "no ceilings stored in " << redact_location(g.store_path) << ": run `xsp machine ceilings`\n";
  } else if (!import_file.empty()) {
    std::ifstream in(import_file);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
      throw std::runtime_error(import_file + ": not JSON: " + e.what());
    }
    // Every entry is checked before anything is stored; a bad one is named by its index in the file (0 for a file
    // holding one object).
    const std::vector<nlohmann::json> entries =
        j.is_array() ? j.get<std::vector<nlohmann::json>>() : std::vector<nlohmann::json>{j};
    for (std::size_t i = 0; i < entries.size(); ++i) {
      try {
        shown.push_back(machine_ceilings_from_json(entries[i]));
      } catch (const std::invalid_argument& e) {
        throw std::runtime_error(import_file + ": entry " + std::to_string(i) + ": " + e.what());
      }
    }
    auto store = open_store(g);
    for (const auto& m : shown) store->save_ceilings(m);
    std::cout << "imported " << shown.size() << " measurement(s) from " << import_file << " into "
              << redact_location(g.store_path) << "\n";
  } else {
    // Open the store first: an unwritable store must fail before the measurement, not after.
    std::unique_ptr<Store> store = no_store ? nullptr : open_store(g);
    MachineCeilings m = measure_machine_ceilings(ceiling_options);
    if (m.hostname.empty() || m.measured_at.empty()) {
      const auto sys = describe_system();
      if (m.hostname.empty() && sys.contains("host")) m.hostname = sys["host"].value("hostname", "");
      if (m.measured_at.empty()) m.measured_at = utc_now_iso8601();
    }
    if (store) {
      store->save_ceilings(m);
      std::cout << "stored in " << redact_location(g.store_path) << "\n";
    }
    shown.push_back(std::move(m));
  }
  for (const auto& m : shown) std::cout << render_text(machine_ceilings_table(m)) << "\n";
  if (!export_file.empty()) {
    auto all = nlohmann::json::array();
    for (const auto& m : shown) all.push_back(to_json(m));
    write_file_atomically(export_file, all.dump(2));
    std::cout << "wrote " << shown.size() << " measurement(s) to " << export_file << "\n";
  }
  return 0;
}

}  // namespace

void add_machine_command(CLI::App& app, Globals& g, Commands& out) {
  auto* machine = app.add_subcommand("machine", "facts about this machine");
  machine->require_subcommand(1);
  auto* ceilings = machine->add_subcommand(
      "ceilings", "measure this GPU's ceilings (peak FLOP/s per precision, DRAM/L2/L1 bandwidth) and store them");
  struct Args {
    CeilingOptions options;
    bool show = false, no_store = false, json = false;
    std::string import_file, export_file;
  };
  auto a = std::make_shared<Args>();
  ceilings->add_option("--device", a->options.device, "CUDA device ordinal")
      ->capture_default_str()
      ->check(integer_at_least(0));
  ceilings->add_option("--repetitions", a->options.repetitions, "timed repetitions per ceiling (best kept)")
      ->capture_default_str()
      ->check(integer_at_least(1));
  ceilings->add_flag("--show", a->show, "print the stored ceilings instead of measuring");
  ceilings
      ->add_option("--import", a->import_file,
                   "store ceilings from a JSON file (an object or an array, as --export writes)")
      ->check(CLI::ExistingFile);
  ceilings->add_option("--export", a->export_file, "also write the ceilings printed to this JSON file");
  ceilings->add_flag("--no-store", a->no_store, "measure and print without storing");
  ceilings->get_option("--show")
      ->excludes("--import")
      ->excludes("--repetitions")
      ->excludes("--device")
      ->excludes("--no-store");
  out.push_back({ceilings, [&g, a] {
                   return run_ceilings(g, a->options, a->show, a->no_store, a->import_file, a->export_file);
                 }});

  auto* state = machine->add_subcommand(
      "state", "GPU clocks, temperature, power and throttle reasons (NVML), CPU governor and load, now");
  state->add_flag("--json", a->json, "as JSON");
  out.push_back({state, [a] {
                   std::string status;
                   const NvmlApi* nvml = system_nvml(&status);
                   const MachineState s = sample_machine_state(nvml);
                   if (a->json)
                     std::cout << to_json(s).dump(2) << "\n";
                   else
                     std::cout << format_machine_state(s);
                   return 0;
                 }});

  auto* describe = machine->add_subcommand(
      "describe",
      "the system description every evaluation records, and what `xsp agent` would register as this "
      "machine's capabilities (frameworks with versions, GPUs with memory, CUDA), as JSON");
  out.push_back({describe, [] {
                   const nlohmann::json system = describe_system();
                   std::cout << nlohmann::json({{"system", system},
                                                {"agent_capabilities", to_json(describe_capabilities(system))}})
                                    .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                             << "\n";
                   return 0;
                 }});
}

}  // namespace xsp::cli
