// G1–G5, analyses of LLM token generation (generation_analyses.h, docs/generation.md "Analyses").
#include "xsp/analysis/generation_analyses.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "internal.h"
#include "xsp/analysis/gpu_analyses.h"
#include "xsp/analysis/registry.h"
#include "xsp/analysis/roofline.h"
#include "xsp/profilers/hardware_counters.h"

namespace xsp {
namespace {

using detail::ms_cell;
using detail::plural;

constexpr double kMs = 1e6;

bool is_model(const Span& s, const char* name) { return s.level == Level::kModel && s.name == name; }
bool is_step(const Span& s) { return is_model(s, kStagePrefill) || is_model(s, kStageDecode); }

// A latency (ns) in ms; empty when the figure does not exist.
Cell number_cell(double v) { return std::isfinite(v) ? Cell{v} : Cell{}; }
Cell ratio_cell(double num, double den) { return den > 0 ? Cell{num / den} : Cell{}; }
Cell pct_cell(double num, double den) { return den > 0 ? Cell{100.0 * num / den} : Cell{}; }

// The run with generation figures for `b` at `level`; `why` gets the reason when there is none.
const RunRecord* generation_run(const EvaluationRecord& record, int b, Level level, std::string& why) {
  const RunRecord* run = record.run_for_level(b, level);
  if (!run) {
    why = "no " +
          std::string(level == Level::kModel       ? "MODEL"
                      : level == Level::kFramework ? "FRAMEWORK"
                                                   : "KERNEL") +
          "-level run";
    return nullptr;
  }
  if (!run->generation) {
    why = std::string("its ") + run_name(run->trace_level) + " run has no generation figures";
    return nullptr;
  }
  return run;
}

// Where a table's figures come from. With `traced_only` (ops and kernels), only the requests whose full traces
// were kept count (GenerationRequest::traced).
std::string source_note(const RunRecord& run, const std::vector<GenerationRequest>& reqs, const char* what,
                        bool traced_only = false) {
  std::size_t requests = 0, decode = 0;
  for (const auto& r : reqs) {
    if (traced_only && !r.traced) continue;
    ++requests;
    decode += r.decode.size();
  }
  std::string n = std::string(what) + " from the " + run_name(run.trace_level) + " run (trace level " +
                  std::string(to_string(run.trace_level)) + "): " +
                  plural(requests, traced_only ? "request with its ops kept" : "request span",
                         traced_only ? "requests with their ops kept" : "request spans");
  n += ", " + plural(decode, "decode step", "decode steps");
  if (traced_only && requests < reqs.size())
    n += " (of " + std::to_string(reqs.size()) +
         " request spans: the other requests' ops were dropped, only the "
         "tail traces are kept)";
  else if (run.generation && run.generation->requests != static_cast<std::int64_t>(reqs.size()))
    n += " (the run measured " + std::to_string(run.generation->requests) +
         " requests; only the traces kept are counted)";
  return n;
}

Table not_generation(const AnalysisSpec& spec, std::optional<int> b) {
  Table t = b ? empty_table(spec, *b) : empty_table(spec);
  t.notes.push_back(kNotGeneration);
  return t;
}

}  // namespace

bool is_generation_evaluation(const EvaluationRecord& record) {
  return std::any_of(record.runs.begin(), record.runs.end(),
                     [](const RunRecord& r) { return r.generation.has_value(); });
}

std::int64_t GenerationRequest::decode_ns() const {
  std::int64_t s = 0;
  for (const auto& d : decode) s += d.duration_ns();
  return s;
}

std::vector<GenerationRequest> extract_generation_requests(const Trace& trace) {
  const std::vector<Span>& spans = trace.spans;
  std::vector<GenerationRequest> out;
  std::unordered_map<SpanId, std::size_t> by_id;
  std::vector<const Span*> reqs;
  for (const Span& s : spans)
    if (is_model(s, kStageRequest)) reqs.push_back(&s);
  std::sort(reqs.begin(), reqs.end(), [](const Span* a, const Span* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->id < b->id;
  });
  for (const Span* s : reqs) {
    GenerationRequest& r = out.emplace_back();
    r.span_id = s->id;
    r.index = s->tag_int("request");
    r.batch_size = s->tag_int("batch_size");
    r.prompt_tokens = s->tag_int("prompt_tokens");
    r.output_tokens = s->tag_int("output_tokens");
    r.start_ns = s->start_ns;
    r.end_ns = s->end_ns;
    by_id.emplace(s->id, out.size() - 1);
  }
  // Decode spans without a "step" tag are numbered by start time after the loop.
  std::vector<std::vector<std::pair<const Span*, bool>>> decodes(out.size());
  for (const Span& s : spans) {
    if (s.level != Level::kModel || s.parent_id == kNoSpan) continue;
    auto it = by_id.find(s.parent_id);
    if (it == by_id.end()) continue;
    GenerationRequest& r = out[it->second];
    if (s.name == kStageTokenize) {
      r.tokenize_ns += s.duration_ns();
    } else if (s.name == kStageDetokenize) {
      r.detokenize_ns += s.duration_ns();
    } else if (s.name == kStagePrefill) {
      r.prefill = GenerationStep{s.id, static_cast<int>(s.tag_int("step").value_or(0)), s.start_ns, s.end_ns};
    } else if (s.name == kStageDecode) {
      decodes[it->second].push_back({&s, s.tag_int("step").has_value()});
    }
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto& d = decodes[i];
    std::sort(d.begin(), d.end(), [](const auto& a, const auto& b) {
      return a.first->start_ns != b.first->start_ns ? a.first->start_ns < b.first->start_ns : a.first->id < b.first->id;
    });
    int next = 1;
    for (const auto& [s, tagged] : d) {
      const int step = tagged ? static_cast<int>(*s->tag_int("step")) : next;
      next = step + 1;
      out[i].decode.push_back({s->id, step, s->start_ns, s->end_ns});
    }
    std::stable_sort(out[i].decode.begin(), out[i].decode.end(),
                     [](const GenerationStep& a, const GenerationStep& b) { return a.step < b.step; });
  }
  std::unordered_map<SpanId, std::size_t> request_of_step;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].prefill) request_of_step.emplace(out[i].prefill->span_id, i);
    for (const auto& d : out[i].decode) request_of_step.emplace(d.span_id, i);
  }
  for (const Span& s : spans)
    if (s.level != Level::kModel && s.level != Level::kApplication && s.parent_id != kNoSpan)
      if (auto it = request_of_step.find(s.parent_id); it != request_of_step.end()) out[it->second].traced = true;
  return out;
}

std::string transformer_layer(const std::string& module) {
  std::size_t begin = 0;
  while (begin < module.size()) {
    std::size_t end = module.find('.', begin);
    if (end == std::string::npos) end = module.size();
    const bool digits = end > begin && std::all_of(module.begin() + static_cast<std::ptrdiff_t>(begin),
                                                   module.begin() + static_cast<std::ptrdiff_t>(end),
                                                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (digits) return module.substr(0, end);
    begin = end + 1;
  }
  return module;
}

namespace {

std::string lowered(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}
bool all_digits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}
bool one_of(std::string_view s, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), s) != names.end();
}
bool has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }
bool attention_module(std::string_view s) { return one_of(s, {"attn", "self_attn", "attention", "self_attention"}); }
bool mlp_module(std::string_view s) {
  return one_of(s, {"mlp", "feed_forward", "ffn", "block_sparse_moe", "moe", "experts"});
}

// The part that a module path's last component names, given its parent; "" when it names none. The order matters
// where names overlap: post_attention_layernorm is a norm, not attention; c_proj and dense depend on the parent.
std::string_view component_part(std::string_view last, std::string_view parent) {
  if (one_of(last, {"lm_head", "embed_out"})) return "lm head";
  if (one_of(last, {"wte", "wpe", "embed_tokens", "embed_in", "word_embeddings", "embed_positions"}))
    return "embedding";
  if (last == "rotary_emb") return "rotary embedding";
  if (last.substr(0, 3) == "ln_" || has(last, "layernorm") || has(last, "layer_norm") || has(last, "rmsnorm") ||
      (last.size() >= 4 && last.substr(last.size() - 4) == "norm"))
    return "norm";
  if (one_of(last, {"q_proj", "query", "wq"})) return "q projection";
  if (one_of(last, {"k_proj", "key", "wk"})) return "k projection";
  if (one_of(last, {"v_proj", "value", "wv"})) return "v projection";
  if (one_of(last, {"c_attn", "query_key_value", "qkv_proj", "qkv", "wqkv", "w_pack"})) return "qkv projection";
  if (mlp_module(last) || mlp_module(parent) ||
      one_of(last, {"c_fc", "gate_proj", "up_proj", "down_proj", "gate_up_proj", "dense_h_to_4h", "dense_4h_to_h",
                    "fc1", "fc2", "fc_in", "fc_out", "w1", "w2", "w3"}))
    return "MLP";
  if (one_of(last, {"o_proj", "out_proj", "wo"})) return "o projection";
  if (one_of(last, {"c_proj", "dense"}) && attention_module(parent)) return "o projection";
  // The rest of an attention module (its dropout, an inner core module) does the attention itself.
  if (attention_module(last) || attention_module(parent) || has(last, "attention") || has(last, "attn"))
    return "attention";
  return "";
}

// The part an op's name gives away when its module does not say (no module tag, or a whole decoder block).
std::string_view op_part(std::string_view op) {
  if (has(op, "attention") || has(op, "attn")) return "attention";  // SDPA, flash and memory-efficient kernels
  if (has(op, "layer_norm") || has(op, "rms_norm")) return "norm";
  if (has(op, "embedding")) return "embedding";
  return "";
}

}  // namespace

std::string transformer_part(std::string_view module, std::string_view op) {
  const std::string path = lowered(module);
  std::vector<std::string_view> parts;
  for (std::size_t begin = 0; begin < path.size();) {
    std::size_t end = path.find('.', begin);
    if (end == std::string::npos) end = path.size();
    parts.emplace_back(path.data() + begin, end - begin);
    begin = end + 1;
  }
  if (!parts.empty() && !all_digits(parts.back())) {
    // Skip list indexes so that experts.0.w1 has parent "experts", as h.0.mlp.c_fc has "mlp".
    std::string_view parent;
    for (std::size_t i = parts.size() - 1; i-- > 0;)
      if (!all_digits(parts[i])) {
        parent = parts[i];
        break;
      }
    if (const std::string_view p = component_part(parts.back(), parent); !p.empty()) return std::string(p);
  }
  const std::string name = lowered(op);
  const std::string_view p = op_part(name);
  return p.empty() ? "other" : std::string(p);
}

// ---- G1 ----

Table g1_prefill_vs_decode(const EvaluationRecord& record) {
  return g1_prefill_vs_decode(record, detail::measured_batch_sizes(record));
}

Table g1_prefill_vs_decode(const EvaluationRecord& record, const std::vector<int>& batch_sizes) {
  const AnalysisSpec& spec = analysis_spec("G1");
  if (!is_generation_evaluation(record)) return not_generation(spec, std::nullopt);
  Table t = empty_table(spec);
  for (int b : batch_sizes) {
    std::string why;
    const RunRecord* run = generation_run(record, b, Level::kModel, why);
    if (!run) {
      t.notes.push_back("batch size " + std::to_string(b) + ": left out, " + why);
      continue;
    }
    const GenerationOutcome& gen = *run->generation;
    const auto reqs = extract_generation_requests(run->trace);
    double request = 0, tok = 0, pre = 0, dec = 0, detok = 0;
    for (const auto& r : reqs) {
      request += static_cast<double>(r.duration_ns());
      tok += static_cast<double>(r.tokenize_ns);
      pre += r.prefill ? static_cast<double>(r.prefill->duration_ns()) : 0.0;
      dec += static_cast<double>(r.decode_ns());
      detok += static_cast<double>(r.detokenize_ns);
    }
    const double n = static_cast<double>(reqs.size());
    RowBuilder row(t);
    row.set("batch_size", std::int64_t{b});
    row.set("requests", static_cast<std::int64_t>(reqs.size()));
    row.set("ttft_p50_ms", ms_cell(gen.ttft_ns.p50));
    row.set("ttft_p99_ms", ms_cell(gen.ttft_ns.p99));
    row.set("tpot_p50_ms", ms_cell(gen.tpot_ns.p50));
    row.set("tpot_p99_ms", ms_cell(gen.tpot_ns.p99));
    row.set("e2e_p50_ms", ms_cell(gen.e2e_ns.p50));
    row.set("output_tokens_per_s", number_cell(gen.output_tokens_per_s));
    row.set("input_tokens_per_s", number_cell(gen.input_tokens_per_s));
    if (n > 0) {
      row.set("request_ms", request / n / kMs);
      row.set("tokenize_ms", tok / n / kMs);
      row.set("prefill_ms", pre / n / kMs);
      row.set("decode_ms", dec / n / kMs);
      row.set("detokenize_ms", detok / n / kMs);
      row.set("tokenize_share_pct", pct_cell(tok, request));
      row.set("prefill_share_pct", pct_cell(pre, request));
      row.set("decode_share_pct", pct_cell(dec, request));
      row.set("detokenize_share_pct", pct_cell(detok, request));
      row.set("other_share_pct", pct_cell(request - tok - pre - dec - detok, request));
    }
    t.rows.push_back(row.take());
    t.notes.push_back(
        "batch size " + std::to_string(b) + ": " +
        source_note(*run, reqs, "TTFT, TPOT, E2E and token rates from RunRecord::generation; stage times"));
  }
  return t;
}

// ---- G2 ----

namespace {

// "decode time by part: MLP 41.2%, attention 22.0%": each part's share of `total`, largest first; "" when there is
// no time to share.
std::string part_shares_note(const char* what, const std::map<std::string, double>& by_part, double total) {
  if (!(total > 0)) return "";
  std::vector<std::pair<std::string, double>> parts(by_part.begin(), by_part.end());
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string n = std::string(what) + " time by part:";
  bool first = true;
  for (const auto& [part, v] : parts) {
    if (!(v > 0)) continue;
    n += (first ? " " : ", ") + part + " " + detail::fixed(100.0 * v / total, 1) + "%";
    first = false;
  }
  return n;
}

}  // namespace

Table g2_layer_prefill_decode(const EvaluationRecord& record, int b) {
  const AnalysisSpec& spec = analysis_spec("G2");
  if (!is_generation_evaluation(record)) return not_generation(spec, b);
  Table t = empty_table(spec, b);
  // Under CUDA graphs a decode step's ops run only as a replay, which only a kernel-level run sees (layers_run).
  const RunRecord* run = layers_run(record, b);
  if (!run) {
    t.notes.push_back("no FRAMEWORK-level run for this batch size (use --trace-level framework)");
    return t;
  }
  const bool replayed = run != record.run_for_level(b, Level::kFramework);
  const Trace& trace = run->trace;
  const auto reqs = extract_generation_requests(trace);
  // Step span id -> prefill (true) or decode (false), for the steps of the requests whose ops were kept.
  std::unordered_map<SpanId, bool> step_kind;
  std::size_t prefills = 0, decodes = 0, traced = 0;
  for (const auto& r : reqs) {
    if (!r.traced) continue;
    ++traced;
    if (r.prefill) {
      step_kind.emplace(r.prefill->span_id, true);
      ++prefills;
    }
    for (const auto& d : r.decode) step_kind.emplace(d.span_id, false);
    decodes += r.decode.size();
  }
  struct Acc {
    std::string op;
    double prefill_ns = 0, decode_ns = 0;
    bool has_module = false;
  };
  std::map<std::string, Acc> by_module;
  std::size_t ops = 0;
  for (const Span& s : trace.spans) {
    if (s.level != Level::kFramework) continue;
    auto it = step_kind.find(s.parent_id);
    if (it == step_kind.end()) continue;
    ++ops;
    auto mod = s.tag("module");
    const std::string key = mod && !mod->empty() ? std::string(*mod) : s.name;
    Acc& a = by_module[key];
    if (a.op.empty()) a.op = s.name;
    a.has_module = mod && !mod->empty();
    (it->second ? a.prefill_ns : a.decode_ns) += static_cast<double>(s.duration_ns());
  }
  struct Row {
    std::string layer, module, part, op;
    double prefill_ms, decode_step_ms, decode_total_ms;
  };
  std::vector<Row> rows;
  double sum_prefill = 0, sum_decode = 0;
  for (const auto& [key, a] : by_module) {
    Row r{a.has_module ? transformer_layer(key) : key,
          key,
          transformer_part(a.has_module ? key : "", a.op),
          a.op,
          prefills ? a.prefill_ns / static_cast<double>(prefills) / kMs : 0.0,
          decodes ? a.decode_ns / static_cast<double>(decodes) / kMs : 0.0,
          traced ? a.decode_ns / static_cast<double>(traced) / kMs : 0.0};
    sum_prefill += r.prefill_ms;
    sum_decode += r.decode_total_ms;
    rows.push_back(std::move(r));
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& x, const Row& y) { return x.decode_total_ms > y.decode_total_ms; });
  std::map<std::string, double> prefill_by_part, decode_by_part;
  for (const Row& r : rows) {
    prefill_by_part[r.part] += r.prefill_ms;
    decode_by_part[r.part] += r.decode_total_ms;
    RowBuilder row(t);
    row.set("layer", r.layer);
    row.set("module", r.module);
    row.set("part", r.part);
    row.set("op", r.op);
    if (prefills) row.set("prefill_ms", r.prefill_ms);
    if (decodes) {
      row.set("decode_step_ms", r.decode_step_ms);
      row.set("decode_total_ms", r.decode_total_ms);
    }
    row.set("prefill_share_pct", pct_cell(r.prefill_ms, sum_prefill));
    row.set("decode_share_pct", pct_cell(r.decode_total_ms, sum_decode));
    t.rows.push_back(row.take());
  }
  std::string n = source_note(*run, reqs, "layer times", true);
  n += ", " + plural(prefills, "prefill step", "prefill steps") + ", " + plural(ops, "top-level op", "top-level ops");
  if (replayed)
    n += "; the decode step ran as a CUDA graph: its layers are the ops replayed on the GPU, each from its first "
         "kernel's start to its last kernel's end, and prefill's host op times include the kernel level's overhead "
         "(docs/cuda-graphs.md)";
  else if (deepest_level(run->trace_level) != Level::kFramework)
    n += "; no run stopped at the FRAMEWORK level, so these include the profiling overhead of deeper levels";
  t.notes.push_back(n);
  for (const std::string& shares : {part_shares_note("decode", decode_by_part, decodes ? sum_decode : 0.0),
                                    part_shares_note("prefill", prefill_by_part, prefills ? sum_prefill : 0.0)})
    if (!shares.empty()) t.notes.push_back(shares);
  if (reqs.empty()) t.notes.push_back("the run's trace has no \"request\" spans (no request trace was kept)");
  return t;
}

// ---- G3 ----

namespace {

constexpr const char* kModelSettings = "settings[\"generation\"][\"model\"]";

// Dimension `key` of the model settings `m` when it is a positive integer; nullopt when absent, and when it is not
// one, with a note, since a mistyped or placeholder value (0, -1, 2.5, "32") must not size a formula.
std::optional<std::int64_t> model_dimension(const nlohmann::json* m, const char* key, std::vector<std::string>& notes) {
  if (m == nullptr || !m->is_object()) return std::nullopt;
  const auto it = m->find(key);
  if (it == m->end() || it->is_null()) return std::nullopt;
  if (it->is_number_unsigned()) {
    const auto u = it->get<std::uint64_t>();
    if (u > 0 && u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return static_cast<std::int64_t>(u);
  } else if (it->is_number_integer()) {
    const auto i = it->get<std::int64_t>();
    if (i > 0) return i;
  } else if (it->is_number_float()) {
    const double d = it->get<double>();
    if (d >= 1 && d <= 9e15 && d == std::floor(d)) return static_cast<std::int64_t>(d);  // exact in a double
  }
  notes.push_back(std::string(kModelSettings) + "[\"" + key + "\"] = " + it->dump() +
                  " is ignored: not a positive integer");
  return std::nullopt;
}

// The KV cache's shape, from the dimensions the generator recorded (Generator::model_dimensions()).
struct KvShape {
  std::optional<double> per_position;  // 2 × n_layer × n_kv_head × head_dim × element_bytes
  std::optional<std::int64_t> n_kv_head, cache_positions;
};

KvShape kv_shape(const EvaluationRecord& record, std::vector<std::string>& notes) {
  const nlohmann::json* m = nullptr;
  const nlohmann::json& settings = record.settings;
  if (settings.is_object() && settings.contains("generation") && settings["generation"].is_object() &&
      settings["generation"].contains("model"))
    m = &settings["generation"]["model"];
  KvShape k;
  const auto layers = model_dimension(m, "n_layer", notes), heads = model_dimension(m, "n_head", notes),
             kv_heads = model_dimension(m, "n_kv_head", notes), head_dim = model_dimension(m, "head_dim", notes),
             bytes = model_dimension(m, "element_bytes", notes);
  k.cache_positions = model_dimension(m, "cache_positions", notes);
  k.n_kv_head = kv_heads ? kv_heads : heads;
  std::vector<std::string> missing;
  if (!layers) missing.emplace_back("n_layer");
  if (!k.n_kv_head) missing.emplace_back("n_kv_head or n_head");
  if (!head_dim) missing.emplace_back("head_dim");
  if (!bytes) missing.emplace_back("element_bytes");
  if (missing.empty()) {
    k.per_position = 2.0 * static_cast<double>(*layers) * static_cast<double>(*k.n_kv_head) *
                     static_cast<double>(*head_dim) * static_cast<double>(*bytes);
  } else {
    std::string n = "formula_bytes is empty: " + std::string(kModelSettings) + " does not give ";
    for (std::size_t i = 0; i < missing.size(); ++i) n += (i ? ", " : "") + missing[i];
    notes.push_back(n);
  }
  if (!kv_heads && heads)
    notes.push_back(std::string(kModelSettings) + " does not give n_kv_head: one KV head per query head (multi-head " +
                    "attention) is assumed, n_kv_head = n_head = " + std::to_string(*heads) +
                    "; for a grouped-query or multi-query attention model (e.g. Llama 3, Mistral, Qwen 2) the formula "
                    "is n_head / n_kv_head times too large");
  return k;
}

}  // namespace

Table g3_kv_cache_memory(const EvaluationRecord& record) {
  return g3_kv_cache_memory(record, detail::measured_batch_sizes(record));
}

Table g3_kv_cache_memory(const EvaluationRecord& record, const std::vector<int>& batch_sizes) {
  const AnalysisSpec& spec = analysis_spec("G3");
  if (!is_generation_evaluation(record)) return not_generation(spec, std::nullopt);
  Table t = empty_table(spec);
  const KvShape shape = kv_shape(record, t.notes);
  for (int b : batch_sizes) {
    std::string why;
    const RunRecord* run = generation_run(record, b, Level::kModel, why);
    if (!run) {
      t.notes.push_back("batch size " + std::to_string(b) + ": left out, " + why);
      continue;
    }
    const GenerationOutcome& gen = *run->generation;
    // The request with the most positions (the largest cache); per-request counts in issue order.
    std::optional<std::int64_t> prompt, output;
    for (std::size_t i = 0; i < std::min(gen.prompt_tokens.size(), gen.output_tokens.size()); ++i) {
      const std::int64_t pi = gen.prompt_tokens[i], oi = gen.output_tokens[i];
      if (!prompt || pi + oi > *prompt + *output) {
        prompt = pi;
        output = oi;
      }
    }
    RowBuilder row(t);
    row.set("batch_size", std::int64_t{b});
    const auto kv = static_cast<double>(gen.kv_cache_bytes);
    row.set("kv_cache_bytes", gen.kv_cache_bytes);
    if (shape.n_kv_head) row.set("n_kv_head", *shape.n_kv_head);
    if (shape.cache_positions) row.set("cache_positions", *shape.cache_positions);
    if (prompt) {
      const std::int64_t positions = *prompt + *output;
      row.set("prompt_tokens", *prompt);
      row.set("output_tokens", *output);
      row.set("positions", positions);
      const double tokens = static_cast<double>(b) * static_cast<double>(positions);
      row.set("bytes_per_token", ratio_cell(kv, tokens));
      if (shape.per_position) {
        const double f = *shape.per_position * static_cast<double>(b) *
                         static_cast<double>(shape.cache_positions ? *shape.cache_positions : positions);
        row.set("formula_bytes", static_cast<std::int64_t>(std::llround(f)));
        row.set("recorded_over_formula", ratio_cell(kv, f));
      }
      if (shape.cache_positions && positions > *shape.cache_positions)
        t.notes.push_back("batch size " + std::to_string(b) + ": the request's " + std::to_string(positions) +
                          " positions exceed cache_positions " + std::to_string(*shape.cache_positions) +
                          ": the static cache cannot have held them all");
    }
    t.rows.push_back(row.take());
  }
  if (shape.per_position)
    t.notes.push_back(
        "formula: 2 (K and V) × n_layer × n_kv_head × head_dim × positions × batch × element_bytes = " +
        detail::fixed(*shape.per_position, 0) +
        " bytes per position and sequence (n_kv_head = n_head for multi-head attention, fewer for grouped-query "
        "(GQA) and 1 for multi-query attention (MQA); Kwon et al. 2023, PagedAttention §2–3)");
  if (shape.per_position && shape.cache_positions)
    t.notes.push_back("the formula's positions are cache_positions = " + std::to_string(*shape.cache_positions) +
                      ": a static KV cache is allocated for that many positions whatever the request's prompt + "
                      "output tokens (the positions column)");
  return t;
}

// ---- G4 ----

Table g4_kernels_per_step(const EvaluationRecord& record, int b) {
  const AnalysisSpec& spec = analysis_spec("G4");
  if (!is_generation_evaluation(record)) return not_generation(spec, b);
  Table t = empty_table(spec, b);
  const RunRecord* run = record.run_for_level(b, Level::kKernel);
  if (!run) {
    t.notes.push_back(kNoKernelRun);
    return t;
  }
  const Trace& trace = run->trace;
  const auto reqs = extract_generation_requests(trace);
  // Only the steps of the requests whose ops (and so kernels) were kept are windows: the others' kernels were
  // dropped with their ops, and would count as steps without kernels.
  std::unordered_map<SpanId, int> step_of;
  for (const auto& r : reqs) {
    if (!r.traced) continue;
    if (r.prefill) step_of.emplace(r.prefill->span_id, r.prefill->step);
    for (const auto& d : r.decode) step_of.emplace(d.span_id, d.step);
  }
  auto is_window = [&](const Span& s) { return is_step(s) && step_of.count(s.id) > 0; };
  const KernelTimeline tl = extract_kernels(trace, is_window);
  const std::vector<std::size_t> api = detail::spans_per_window(trace, Level::kSystem, is_window);
  if (tl.kernel_spans == 0) {
    t.notes.push_back("the " + std::string(run_name(run->trace_level)) +
                      " run has no KERNEL spans (a CPU run, or no GPU work was traced): no kernels per step");
    return t;
  }
  const std::size_t w = tl.predicts.size();
  std::vector<std::size_t> count(w, 0);
  std::vector<double> time(w, 0);
  std::vector<std::set<SpanId>> launches(w);
  for (const GpuKernel& k : tl.kernels) {
    ++count[k.batch];
    time[k.batch] += static_cast<double>(k.duration_ns());
    if (k.has_launch()) launches[k.batch].insert(k.launch_span_id);
  }
  struct Acc {
    std::size_t n = 0;
    double step_ns = 0, kernels = 0, kernel_ns = 0, launch = 0, api = 0;
  };
  std::map<int, Acc> by_step;
  std::vector<double> decode_counts;
  for (std::size_t i = 0; i < w; ++i) {
    const PredictWindow& win = tl.predicts[i];
    const int step = step_of.at(win.span_id);
    Acc& a = by_step[step];
    ++a.n;
    a.step_ns += static_cast<double>(win.end_ns - win.start_ns);
    a.kernels += static_cast<double>(count[i]);
    a.kernel_ns += time[i];
    a.launch += static_cast<double>(launches[i].size());
    a.api += static_cast<double>(i < api.size() ? api[i] : 0);
    if (step > 0) decode_counts.push_back(static_cast<double>(count[i]));
  }
  for (const auto& [step, a] : by_step) {
    const double n = static_cast<double>(a.n);
    RowBuilder row(t);
    row.set("step", std::int64_t{step});
    row.set("samples", static_cast<std::int64_t>(a.n));
    row.set("step_ms", a.step_ns / n / kMs);
    row.set("kernel_count", a.kernels / n);
    row.set("kernel_time_ms", a.kernel_ns / n / kMs);
    row.set("launch_calls", a.launch / n);
    row.set("api_calls", a.api / n);
    row.set("gpu_busy_pct", pct_cell(a.kernel_ns, a.step_ns));
    t.rows.push_back(row.take());
  }
  t.notes.push_back(source_note(*run, reqs, "kernels", true));
  if (!decode_counts.empty()) {
    double sum = 0;
    for (double c : decode_counts) sum += c;
    const auto [lo, hi] = std::minmax_element(decode_counts.begin(), decode_counts.end());
    t.notes.push_back("kernels per decode step: mean " +
                      detail::fixed(sum / static_cast<double>(decode_counts.size()), 1) + " (min " +
                      detail::fixed(*lo, 0) + ", max " + detail::fixed(*hi, 0) + ") over " +
                      plural(decode_counts.size(), "decode step", "decode steps"));
  }
  const std::size_t placed = tl.kernels.size();
  if (placed < tl.kernel_spans)
    t.notes.push_back(std::to_string(tl.kernel_spans - placed) + " of " + std::to_string(tl.kernel_spans) +
                      " KERNEL spans are not under a prefill or decode step of a request span; they are not counted");
  return t;
}

// ---- G5 ----

namespace {

// A HARDWARE span's counters: its tags that name a counter (hw::find_counter), read as numbers.
CounterValues counters_of(const Span& s) {
  CounterValues v;
  for (const Tag& t : s.tags) {
    if (hw::find_counter(t.key) == nullptr) continue;  // range_index, replay, ...
    double x = 0;
    const char* end = t.value.data() + t.value.size();
    const auto [p, ec] = std::from_chars(t.value.data(), end, x);
    if (ec == std::errc() && p == end && std::isfinite(x)) v[t.key] = x;
  }
  return v;
}

}  // namespace

std::vector<StepCounters> generation_step_counters(const Trace& trace, std::size_t* outside_steps) {
  std::unordered_map<SpanId, const Span*> by_id;
  for (const Span& s : trace.spans) by_id[s.id] = &s;
  auto step_above = [&](const Span& s) -> const Span* {
    for (auto it = by_id.find(s.parent_id); it != by_id.end(); it = by_id.find(it->second->parent_id))
      if (is_step(*it->second)) return it->second;
    return nullptr;
  };
  struct StepSum {
    std::size_t kernels = 0;
    double flops = 0, dram_bytes = 0;
    bool have_flops = false, have_bytes = false;
  };
  std::map<SpanId, StepSum> per_span;  // step span -> its kernels' sums
  std::size_t outside = 0;
  for (const Span& s : trace.spans) {
    if (s.level != Level::kHardware) continue;
    const Span* step = step_above(s);
    if (step == nullptr) {
      ++outside;
      continue;
    }
    StepSum& sum = per_span[step->id];
    ++sum.kernels;
    const CounterValues v = counters_of(s);
    if (const auto f = hw::total_flops(v)) {
      sum.flops += *f;
      sum.have_flops = true;
    }
    if (const auto b = level_bytes(v, MemoryLevel::kDram)) {
      sum.dram_bytes += *b;
      sum.have_bytes = true;
    }
  }
  if (outside_steps != nullptr) *outside_steps = outside;
  struct Acc {
    std::string phase;
    std::size_t n = 0, n_flops = 0, n_bytes = 0;
    double kernels = 0, flops = 0, dram_bytes = 0;
  };
  std::map<std::int64_t, Acc> by_step;
  for (const auto& [id, sum] : per_span) {
    const Span& step = *by_id.at(id);
    Acc& a = by_step[step.tag_int("step").value_or(-1)];
    a.phase = step.name;
    ++a.n;
    a.kernels += static_cast<double>(sum.kernels);
    if (sum.have_flops) a.flops += sum.flops, ++a.n_flops;
    if (sum.have_bytes) a.dram_bytes += sum.dram_bytes, ++a.n_bytes;
  }
  std::vector<StepCounters> out;
  for (const auto& [step, a] : by_step) {
    StepCounters c;
    c.step = step;
    c.phase = a.phase;
    c.requests = a.n;
    c.kernels = a.kernels / static_cast<double>(a.n);
    if (a.n_flops) c.flops = a.flops / static_cast<double>(a.n_flops);
    if (a.n_bytes) c.dram_bytes = a.dram_bytes / static_cast<double>(a.n_bytes);
    if (c.flops && c.dram_bytes) c.arithmetic_intensity = arithmetic_intensity(*c.flops, *c.dram_bytes);
    out.push_back(std::move(c));
  }
  return out;
}

Table g5_counters_per_step(const EvaluationRecord& record, int b) {
  const AnalysisSpec& spec = analysis_spec("G5");
  if (!is_generation_evaluation(record)) return not_generation(spec, b);
  Table t = empty_table(spec, b);
  const RunRecord* run = record.run_for_level(b, Level::kHardware);
  if (!run) {
    t.notes.push_back("no counter run for this batch size: evaluate with --trace-level hardware on a GPU");
    return t;
  }
  std::size_t outside = 0;
  const std::vector<StepCounters> steps = generation_step_counters(run->trace, &outside);
  auto opt = [](const std::optional<double>& v, double scale) { return v ? Cell{*v * scale} : Cell{}; };
  for (const StepCounters& c : steps) {
    RowBuilder row(t);
    row.set("step", c.step);
    row.set("samples", static_cast<std::int64_t>(c.requests));
    row.set("kernels", c.kernels);
    row.set("gflops", opt(c.flops, 1e-9));
    row.set("dram_mb", opt(c.dram_bytes, 1e-6));
    row.set("arithmetic_intensity", opt(c.arithmetic_intensity, 1.0));
    t.rows.push_back(row.take());
  }
  if (steps.empty())
    t.notes.push_back("the counter run has no HARDWARE spans under prefill or decode steps" +
                      std::string(run->generation && !run->generation->counters_unavailable.empty()
                                      ? ": " + run->generation->counters_unavailable
                                      : ""));
  else
    t.notes.push_back("counters of " + plural(steps.front().requests, "request", "requests") +
                      ", every kernel replayed once per metric pass inside its launch (kernel replay): the counter "
                      "run's timings are not used (SPEC §3)");
  if (outside > 0)
    t.notes.push_back(std::to_string(outside) + " HARDWARE spans are not under a prefill or decode step; not counted");
  return t;
}

}  // namespace xsp
