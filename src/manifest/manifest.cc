// Model manifests (SPEC §5): parsing, validation, model zoo, checksums.
#include "xsp/manifest/manifest.h"

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <set>
#include <sstream>
#include <utility>

#include "xsp/manifest/files.h"
#include "xsp/manifest/semver.h"
#include "xsp/util/strings.h"

namespace xsp {
namespace {

namespace limits = manifest_limits;

// "FILE:LINE: field 'x': MESSAGE"; the line is left out when unknown (0) and the field when there is none
// (e.g. an unreadable file), so that messages never show ":0" or "field ''".
std::string format_error(const std::string& file, int line, const std::string& field, const std::string& msg) {
  std::string s = file;
  if (line > 0) s += ":" + std::to_string(line);
  s += ": ";
  if (!field.empty()) s += "field '" + field + "': ";
  return s + msg;
}

// A value for a message: quoted, and cut to its first 60 characters (with the full length) when longer, so that a
// 50,000-character field does not become a 50,000-character error.
std::string shown(const std::string& v) {
  constexpr std::size_t kShown = 60;
  if (v.size() <= kShown) return "'" + v + "'";
  return "'" + v.substr(0, kShown) + "...' (" + std::to_string(v.size()) + " characters)";
}

// Why `v` is not a semantic version MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD] (semver.org 2.0.0; identifiers of
// [0-9A-Za-z.-]), or "" when it is one. A loop, not std::regex: libstdc++'s regex recurses once per character
// and overflowed the stack on long versions. Numbers are limited to kMaxVersionNumber so that they always fit.
std::string semver_problem(const std::string& v) {
  std::size_t i = 0;
  const char* names[3] = {"MAJOR", "MINOR", "PATCH"};
  for (int part = 0; part < 3; ++part) {
    if (part > 0) {
      if (i >= v.size() || v[i] != '.') return "expected '.' before " + std::string(names[part]);
      ++i;
    }
    const std::size_t start = i;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i;
    const std::size_t digits = i - start;
    if (digits == 0) return std::string(names[part]) + " is not a number";
    if (digits > 1 && v[start] == '0') return std::string(names[part]) + " has a leading zero";
    if (digits > 9 || std::stol(v.substr(start, digits)) > kMaxVersionNumber)
      return std::string(names[part]) + " " + shown(v.substr(start, digits)) + " is too large (at most " +
             std::to_string(kMaxVersionNumber) + ")";
  }
  auto identifiers = [&](const char* what) -> std::string {
    const std::size_t start = i;
    while (i < v.size() && (std::isalnum(static_cast<unsigned char>(v[i])) || v[i] == '.' || v[i] == '-')) ++i;
    if (i == start) return std::string("empty ") + what;
    return "";
  };
  if (i < v.size() && v[i] == '-') {
    ++i;
    if (auto why = identifiers("prerelease after '-'"); !why.empty()) return why;
  }
  if (i < v.size() && v[i] == '+') {
    ++i;
    if (auto why = identifiers("build metadata after '+'"); !why.empty()) return why;
  }
  if (i < v.size())
    return "unexpected character " + shown(std::string(1, v[i])) + " at position " + std::to_string(i + 1);
  return "";
}

// Orders versions that may not parse (a Manifest built in code): those first, then by semver.
bool version_less(const std::string& a, const std::string& b) {
  const auto va = parse_semver(a), vb = parse_semver(b);
  if (!va || !vb) return !va && vb;
  return *va < *vb;
}

// Reads one manifest; every check goes through fail(), which knows the file and turns YAML marks into
// 1-based lines. Nodes are only read through const references: yaml-cpp's non-const operator[] inserts
// missing keys, which would hide a missing field.
class Parser {
 public:
  explicit Parser(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& field, const std::string& msg) const {
    int line = at.IsDefined() ? at.Mark().line + 1 : 0;
    throw ManifestError(file_, line < 0 ? 0 : line, field, msg);
  }

  static std::string describe(const YAML::Node& n) {
    if (!n.IsDefined() || n.IsNull()) return "nothing";
    if (n.IsScalar()) return shown(n.Scalar());
    if (n.IsSequence()) return "a list";
    return "a mapping";
  }

  // Checks that `map` is a mapping whose keys are all in `allowed`, without duplicates.
  void check_map(const YAML::Node& map, const std::string& field, const std::set<std::string>& allowed) const {
    if (!map.IsMap()) fail(map, field, "expected a mapping, got " + describe(map));
    std::set<std::string> seen;
    for (const auto& kv : map) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      const std::string path = field.empty() ? key : field + "." + key;
      if (!allowed.count(key)) {
        std::vector<std::string> names(allowed.begin(), allowed.end());
        fail(kv.first, path, "unknown key '" + key + "' (a typo?); expected one of: " + util::join(names, ", "));
      }
      if (!seen.insert(key).second) fail(kv.first, path, "duplicate key '" + key + "'");
    }
  }

  // The value of a required key; a missing key is reported at the line of the enclosing mapping.
  YAML::Node required(const YAML::Node& map, const std::string& key, const std::string& path) const {
    YAML::Node n = map[key];
    if (!n.IsDefined()) fail(map, path, "missing required field '" + key + "'");
    return n;
  }

  // A string of at most `max_length` bytes (manifest_limits): longer ones are refused before any further check.
  std::string string_of(const YAML::Node& n, const std::string& path, std::size_t max_length,
                        bool allow_empty = false) const {
    if (!n.IsScalar() || (!allow_empty && n.Scalar().empty()))
      fail(n, path, std::string("expected a ") + (allow_empty ? "" : "non-empty ") + "string, got " + describe(n));
    if (n.Scalar().size() > max_length)
      fail(n, path,
           "expected at most " + std::to_string(max_length) + " characters, got " + std::to_string(n.Scalar().size()) +
               " (" + shown(n.Scalar()) + ")");
    return n.Scalar();
  }

  // A file path (graph_path, labels, tokenize/detokenize model, attributes.prompts, attributes.dataset_path): a
  // non-empty string that can be a path on Linux, so that later file-system calls on it fail as "no such file"
  // rather than with ENAMETOOLONG or a silently cut name: no NUL byte, no component longer than NAME_MAX (255
  // bytes), at most PATH_MAX (4096) bytes as written and once resolved against the manifest's folder.
  std::string path_of(const YAML::Node& n, const std::string& path, bool allow_empty = false) const {
    const std::string v = string_of(n, path, limits::kMaxPathLength, allow_empty);
    if (const auto nul = v.find('\0'); nul != std::string::npos)
      fail(n, path,
           "expected a file path without NUL bytes, got one at byte " + std::to_string(nul + 1) + " of " + shown(v));
    for (std::size_t start = 0; start <= v.size();) {
      std::size_t end = v.find('/', start);
      if (end == std::string::npos) end = v.size();
      if (end - start > limits::kMaxPathComponentLength)
        fail(n, path,
             "expected a file path whose names between '/' have at most " +
                 std::to_string(limits::kMaxPathComponentLength) + " bytes (NAME_MAX), got one of " +
                 std::to_string(end - start) + " bytes: " + shown(v.substr(start, end - start)));
      start = end + 1;
    }
    if (v.find("://") == std::string::npos && !v.empty() && v.front() != '/') {
      const std::string resolved = (std::filesystem::path(file_).parent_path() / v).lexically_normal().string();
      if (resolved.size() > limits::kMaxPathLength)
        fail(n, path,
             "expected a file path of at most " + std::to_string(limits::kMaxPathLength) +
                 " bytes (PATH_MAX) once resolved against the manifest's folder, got " +
                 std::to_string(resolved.size()) + " bytes (" + shown(resolved) + ")");
    }
    return v;
  }

  std::string one_of(const YAML::Node& n, const std::string& path, const std::vector<std::string>& choices) const {
    std::string v = string_of(n, path, limits::kMaxNameLength);
    if (std::find(choices.begin(), choices.end(), v) == choices.end())
      fail(n, path, "expected one of " + util::join(choices, ", ") + ", got " + shown(v));
    return v;
  }

  // An integer from `lo` to `hi`; anything else (not an integer, too large for a long, out of range) is refused
  // naming the value and the range, never wrapped or clamped.
  long int_in_range(const YAML::Node& n, const std::string& path, long lo, long hi) const {
    const std::string range = std::string(lo == 1 ? "a positive integer" : "an integer") + " from " +
                              std::to_string(lo) + " to " + std::to_string(hi);
    long v = 0;
    if (n.IsScalar()) {
      const std::string& s = n.Scalar();
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (p == s.data() + s.size() && !s.empty()) {
        if (ec == std::errc() && v >= lo && v <= hi) return v;
        if (ec == std::errc() || ec == std::errc::result_out_of_range)
          fail(n, path, "expected " + range + ", got " + describe(n) + " (out of range)");
      }
    }
    fail(n, path, "expected " + range + ", got " + describe(n));
  }

  // A YAML list of at most `max` entries (manifest_limits::kMaxListLength unless given).
  void check_list_size(const YAML::Node& n, const std::string& path, std::size_t max = limits::kMaxListLength) const {
    if (n.IsSequence() && n.size() > max)
      fail(n, path, "expected at most " + std::to_string(max) + " entries, got " + std::to_string(n.size()));
  }

  double number(const YAML::Node& n, const std::string& path) const {
    if (n.IsScalar() && !n.Scalar().empty()) {
      const std::string& s = n.Scalar();
      char* end = nullptr;
      double v = std::strtod(s.c_str(), &end);
      if (end == s.c_str() + s.size() && std::isfinite(v)) return v;
    }
    fail(n, path, "expected a number, got " + describe(n));
  }

  std::vector<double> number_list(const YAML::Node& n, const std::string& path) const {
    if (!n.IsSequence() || n.size() == 0) fail(n, path, "expected a non-empty list of numbers, got " + describe(n));
    check_list_size(n, path);
    std::vector<double> out;
    for (std::size_t i = 0; i < n.size(); ++i) out.push_back(number(n[i], path + "[" + std::to_string(i) + "]"));
    return out;
  }

  // Which step an input or output of `type` may have, in the order the messages list them.
  static const std::vector<std::string>& allowed_steps(bool input_side, const std::string& type) {
    static const std::vector<std::string> image = {"decode", "resize", "center_crop", "normalize"};
    static const std::vector<std::string> text = {"tokenize", "pad_truncate"};
    static const std::vector<std::string> classes = {"softmax", "top_k"};
    static const std::vector<std::string> detection = {"nms"};
    static const std::vector<std::string> segmentation = {"argmax"};
    static const std::vector<std::string> generation = {"generate", "detokenize"};
    if (input_side) return type == "text" ? text : image;
    if (type == "detection") return detection;
    if (type == "segmentation") return segmentation;
    if (type == "generation") return generation;
    return classes;
  }

  // A boolean written true or false; stored as "true" / "false".
  std::string boolean(const YAML::Node& n, const std::string& path) const {
    const std::string v = n.IsScalar() ? n.Scalar() : "";
    if (v == "true" || v == "True" || v == "TRUE") return "true";
    if (v == "false" || v == "False" || v == "FALSE") return "false";
    fail(n, path, "expected true or false, got " + describe(n));
  }

  // A number in (lo, hi] (or [lo, hi] with `lo_closed`), refused naming the interval.
  double number_in(const YAML::Node& n, const std::string& path, double lo, bool lo_closed, double hi) const {
    const double v = number(n, path);
    if ((lo_closed ? v < lo : v <= lo) || v > hi) {
      std::ostringstream range;
      range << (lo_closed ? "[" : "(") << lo << ", " << hi << "]";
      fail(n, path, "expected a number in " + range.str() + ", got " + describe(n));
    }
    return v;
  }

  // One step: a mapping with a single key, the op, whose value holds the parameters ({} or nothing when none).
  // `type` is the input's or output's type, which decides the steps allowed; `channels` is an image input's
  // channel count (0 otherwise) and `sequence` a text input's dimensions[0] (0 otherwise).
  ProcessingStep step(const YAML::Node& n, const std::string& path, bool input_side, const std::string& type,
                      long channels, long sequence) const {
    static const std::vector<std::string> input_ops = {"decode",    "resize",   "center_crop",
                                                       "normalize", "tokenize", "pad_truncate"};
    static const std::vector<std::string> output_ops = {"softmax", "top_k", "nms", "argmax", "generate", "detokenize"};
    const auto& known = input_side ? input_ops : output_ops;
    const auto& ops = allowed_steps(input_side, type);
    if (!n.IsMap() || n.size() != 1)
      fail(n, path,
           "expected a mapping with one key, the step (one of " + util::join(ops, ", ") + "), got " + describe(n));
    ProcessingStep s;
    s.line = n.Mark().line + 1;
    const YAML::Node key = n.begin()->first;
    const YAML::Node args = n.begin()->second;
    s.op = key.IsScalar() ? key.Scalar() : "";
    const std::string at = path + "." + s.op;
    if (std::find(known.begin(), known.end(), s.op) == known.end())
      fail(key, path,
           std::string("unknown ") + (input_side ? "pre" : "post") + "-processing step " + shown(s.op) +
               "; expected one of " + util::join(ops, ", "));
    if (std::find(ops.begin(), ops.end(), s.op) == ops.end())
      fail(key, path,
           "step '" + s.op + "' is not allowed on " + (input_side ? "an input" : "an output") + " of type " + type +
               "; expected one of " + util::join(ops, ", "));
    // A step without parameters may be written "decode: {}" or "decode:".
    const YAML::Node p = args.IsNull() ? YAML::Node(YAML::NodeType::Map) : args;
    auto scalar = [&](const std::string& k) { s.params[k] = p[k].Scalar(); };

    if (s.op == "decode" || s.op == "softmax") {
      check_map(p, at, {});
    } else if (s.op == "resize") {
      check_map(p, at, {"shorter_side", "method"});
      int_in_range(required(p, "shorter_side", at + ".shorter_side"), at + ".shorter_side", 1, limits::kMaxImageSide);
      scalar("shorter_side");
      if (p["method"].IsDefined())
        s.params["method"] = one_of(p["method"], at + ".method", {"bilinear", "nearest", "bicubic", "area"});
      else
        s.params["method"] = "bilinear";
    } else if (s.op == "center_crop") {
      check_map(p, at, {"size"});
      int_in_range(required(p, "size", at + ".size"), at + ".size", 1, limits::kMaxImageSide);
      scalar("size");
    } else if (s.op == "normalize") {
      check_map(p, at, {"mean", "std", "scale"});
      auto mean = number_list(required(p, "mean", at + ".mean"), at + ".mean");
      auto stdv = number_list(required(p, "std", at + ".std"), at + ".std");
      if (mean.size() != stdv.size())
        fail(p["std"], at + ".std",
             "expected as many values as mean (" + std::to_string(mean.size()) + "), got " +
                 std::to_string(stdv.size()));
      // One value per channel, or one for all channels.
      if (channels > 0 && mean.size() != 1 && static_cast<long>(mean.size()) != channels)
        fail(p["mean"], at + ".mean",
             "expected 1 or " + std::to_string(channels) + " values (one per channel), got " +
                 std::to_string(mean.size()));
      for (std::size_t i = 0; i < stdv.size(); ++i)
        if (stdv[i] == 0)
          fail(p["std"][i], at + ".std[" + std::to_string(i) + "]", "expected a non-zero number, got 0");
      s.list_params["mean"] = mean;
      s.list_params["std"] = stdv;
      if (p["scale"].IsDefined()) {
        if (const double v = number(p["scale"], at + ".scale"); v <= 0 || v > limits::kMaxScale)
          fail(p["scale"], at + ".scale",
               "expected a number > 0 and at most " + std::to_string(static_cast<long>(limits::kMaxScale)) + ", got " +
                   describe(p["scale"]));
        scalar("scale");
      } else {
        s.params["scale"] = "1";
      }
    } else if (s.op == "top_k") {
      check_map(p, at, {"k"});
      int_in_range(required(p, "k", at + ".k"), at + ".k", 1, limits::kMaxTopK);
      scalar("k");
    } else if (s.op == "tokenize" || s.op == "detokenize") {
      // A SentencePiece model file, relative to the manifest, verified by its digest like a graph.
      if (s.op == "tokenize")
        check_map(p, at, {"model", "checksum", "add_bos", "add_eos"});
      else
        check_map(p, at, {"model", "checksum"});
      s.params["model"] = path_of(required(p, "model", at + ".model"), at + ".model");
      s.params["checksum"] = checksum(required(p, "checksum", at + ".checksum"), at + ".checksum");
      if (s.op == "tokenize")
        for (const char* flag : {"add_bos", "add_eos"})
          s.params[flag] = p[flag].IsDefined() ? boolean(p[flag], at + "." + flag) : "false";
    } else if (s.op == "pad_truncate") {
      check_map(p, at, {"length", "side", "pad_id"});
      int_in_range(required(p, "length", at + ".length"), at + ".length", 1, sequence);
      scalar("length");
      s.params["side"] = p["side"].IsDefined() ? one_of(p["side"], at + ".side", {"left", "right"}) : "right";
      if (p["pad_id"].IsDefined()) {
        int_in_range(p["pad_id"], at + ".pad_id", 0, limits::kMaxTokenId);
        scalar("pad_id");
      } else {
        s.params["pad_id"] = "0";
      }
    } else if (s.op == "nms") {
      check_map(p, at, {"iou_threshold", "score_threshold", "max_detections"});
      number_in(required(p, "iou_threshold", at + ".iou_threshold"), at + ".iou_threshold", 0, false, 1);
      scalar("iou_threshold");
      if (p["score_threshold"].IsDefined()) {
        number_in(p["score_threshold"], at + ".score_threshold", 0, true, 1);
        scalar("score_threshold");
      } else {
        s.params["score_threshold"] = "0.05";
      }
      if (p["max_detections"].IsDefined()) {
        int_in_range(p["max_detections"], at + ".max_detections", 1, limits::kMaxDetections);
        scalar("max_detections");
      } else {
        s.params["max_detections"] = "100";
      }
    } else if (s.op == "argmax") {
      check_map(p, at, {"axis"});
      if (p["axis"].IsDefined()) {
        int_in_range(p["axis"], at + ".axis", 0, limits::kMaxAxis);
        scalar("axis");
      } else {
        s.params["axis"] = "0";
      }
    } else if (s.op == "generate") {
      check_map(p, at, {"max_new_tokens", "sampling", "signature"});
      if (p["max_new_tokens"].IsDefined()) {
        int_in_range(p["max_new_tokens"], at + ".max_new_tokens", 1, limits::kMaxSequenceLength);
        scalar("max_new_tokens");
      } else {
        s.params["max_new_tokens"] = "32";
      }
      s.params["sampling"] = p["sampling"].IsDefined() ? one_of(p["sampling"], at + ".sampling", {"greedy"}) : "greedy";
      // How the generator drives the model (docs/generation.md "Signatures"): XSP's own TorchScript contract
      // (init_cache/prefill/decode) or Hugging Face's static-cache export (input_ids, cache_position; the cache is
      // module state).
      s.params["signature"] = p["signature"].IsDefined()
                                  ? one_of(p["signature"], at + ".signature", {"xsp-contract", "hf-static-cache"})
                                  : "xsp-contract";
    }
    return s;
  }

  std::string constraint(const YAML::Node& n, const std::string& path) const {
    std::string c = string_of(n, path, limits::kMaxNameLength);
    try {
      check_constraint(c);
    } catch (const std::invalid_argument& e) {
      fail(n, path, e.what());
    }
    return c;
  }

  std::string checksum(const YAML::Node& n, const std::string& path) const {
    std::string c = string_of(n, path, limits::kMaxNameLength);
    const std::string prefix = "sha256:";
    bool ok = c.size() == prefix.size() + 64 && c.compare(0, prefix.size(), prefix) == 0;
    for (std::size_t i = prefix.size(); ok && i < c.size(); ++i)
      ok = (c[i] >= '0' && c[i] <= '9') || (c[i] >= 'a' && c[i] <= 'f');
    if (!ok) fail(n, path, "expected 'sha256:' followed by 64 lower-case hex digits, got " + shown(c));
    return c;
  }

  std::vector<ProcessingStep> steps(const YAML::Node& map, const std::string& path, bool input_side,
                                    const std::string& type, long channels, long sequence) const {
    std::vector<ProcessingStep> out;
    const YAML::Node n = map["steps"];
    if (n.IsDefined() && !n.IsNull()) {
      if (!n.IsSequence()) fail(n, path, "expected a list of steps, got " + describe(n));
      check_list_size(n, path);
      for (std::size_t i = 0; i < n.size(); ++i)
        out.push_back(step(n[i], path + "[" + std::to_string(i) + "]", input_side, type, channels, sequence));
    }
    // Text inputs and generation outputs: a required first step and an optional second one, each at most once.
    const bool text = input_side && type == "text", generation = !input_side && type == "generation";
    if (text || generation) {
      const std::string first = text ? "tokenize" : "generate";
      const std::string what = text ? "a text input" : "a generation output";
      if (out.empty())
        fail(n.IsDefined() && !n.IsNull() ? n : map, path,
             "missing required step '" + first + "' (the first step of " + what + ")");
      if (out[0].op != first)
        fail(n[0], path + "[0]", "expected '" + first + "' as the first step of " + what + ", got '" + out[0].op + "'");
      for (std::size_t i = 1; i < out.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
          if (out[j].op == out[i].op)
            fail(n[i], path + "[" + std::to_string(i) + "]",
                 "step '" + out[i].op + "' may appear once in " + what + " (also " + path + "[" + std::to_string(j) +
                     "] at line " + std::to_string(out[j].line) + ")");
    }
    return out;
  }

  // An input's or output's name: given (checked) or its default, `base` alone or base_<i> when there are several.
  std::string entry_name(const YAML::Node& n, const std::string& path, const std::string& base, std::size_t i,
                         std::size_t count) const {
    const YAML::Node name = n["name"];
    if (!name.IsDefined() || name.IsNull()) return count == 1 ? base : base + "_" + std::to_string(i);
    const std::string v = string_of(name, path + ".name", limits::kMaxNameLength);
    bool ok = std::isalpha(static_cast<unsigned char>(v[0])) || v[0] == '_';
    for (std::size_t k = 1; ok && k < v.size(); ++k)
      ok = std::isalnum(static_cast<unsigned char>(v[k])) || v[k] == '_' || v[k] == '.' || v[k] == '-';
    if (!ok)
      fail(name, path + ".name",
           "expected a name of letters, digits, '_', '.' and '-' that starts with a letter or "
           "'_', got " +
               shown(v));
    return v;
  }

  // The last of `names` differs from the others (entries of `list`, the inputs or outputs); the message names both
  // entries.
  void check_unique_names(const YAML::Node& list, const std::string& what,
                          const std::vector<std::string>& names) const {
    const std::size_t i = names.size() - 1;
    for (std::size_t j = 0; j < i; ++j)
      if (names[i] == names[j]) {
        const std::string one = what.substr(0, what.size() - 1);  // "input", "output"
        const YAML::Node at = list[i]["name"].IsDefined() && !list[i]["name"].IsNull() ? list[i]["name"] : list[i];
        fail(at, what + "[" + std::to_string(i) + "].name",
             "duplicate " + one + " name " + shown(names[i]) + " (also " + what + "[" + std::to_string(j) +
                 "] at line " + std::to_string(list[j].Mark().line + 1) + "); names must be unique (an unnamed " + one +
                 " is called " + one + " or " + one + "_<i>)");
      }
  }

  InputSpec input(const YAML::Node& n, const std::string& path, std::size_t index, std::size_t count) const {
    check_map(n, path, {"name", "type", "element_type", "layout", "color_mode", "dimensions", "steps"});
    InputSpec in;
    in.name = entry_name(n, path, "input", index, count);
    in.type = one_of(required(n, "type", path + ".type"), path + ".type", {"image", "tensor", "text"});
    const YAML::Node element = required(n, "element_type", path + ".element_type");
    in.element_type =
        one_of(element, path + ".element_type", {"float32", "float16", "bfloat16", "int64", "int32", "bool"});
    if (in.type == "image" && in.element_type != "float32" && in.element_type != "float16" &&
        in.element_type != "bfloat16")
      fail(element, path + ".element_type",
           "expected float32, float16 or bfloat16 for an input of type image "
           "(normalized pixels), got " +
               shown(in.element_type));
    if (in.type == "text" && in.element_type != "int64" && in.element_type != "int32")
      fail(element, path + ".element_type",
           "expected int64 or int32 for an input of type text (token ids), got " + shown(in.element_type));
    if (in.type == "text") {
      if (n["layout"].IsDefined())
        fail(n["layout"], path + ".layout", "an input of type text has no layout (its one dimension is the sequence)");
      in.layout = "";
    } else {
      in.layout = n["layout"].IsDefined() ? one_of(n["layout"], path + ".layout", {"NCHW"}) : "NCHW";
    }
    const YAML::Node dims = required(n, "dimensions", path + ".dimensions");
    if (!dims.IsSequence() || dims.size() == 0)
      fail(dims, path + ".dimensions", "expected a non-empty list of positive integers, got " + describe(dims));
    check_list_size(dims, path + ".dimensions", limits::kMaxRank);
    // Each dimension and their product (one sample's elements) are bounded up front, so that a typo fails here
    // with the field named rather than as std::bad_alloc or a wrapped size when the input tensor is allocated.
    long elements = 1;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      in.dimensions.push_back(
          int_in_range(dims[i], path + ".dimensions[" + std::to_string(i) + "]", 1, limits::kMaxInputElements));
      elements *= in.dimensions.back();  // each factor <= 2^31 and the product so far <= 2^31: fits in 63 bits
      if (elements > limits::kMaxInputElements) {
        std::string shape;
        for (std::size_t j = 0; j < dims.size(); ++j)
          shape += (j ? "x" : "") + (dims[j].IsScalar() ? dims[j].Scalar() : "?");
        fail(dims, path + ".dimensions",
             "expected at most " + std::to_string(limits::kMaxInputElements) + " elements per sample, got " + shape +
                 " (more than " + std::to_string(limits::kMaxInputElements) + ")");
      }
    }
    long channels = 0;
    if (in.type == "image") {
      in.color_mode =
          n["color_mode"].IsDefined() ? one_of(n["color_mode"], path + ".color_mode", {"RGB", "BGR", "GRAY"}) : "RGB";
      // An image is one sample of shape [C, H, W]; C must agree with the colour mode or the
      // pre-processing would feed the model the wrong number of planes.
      if (in.dimensions.size() != 3)
        fail(dims, path + ".dimensions",
             "expected [channels, height, width] for an image, got " + std::to_string(in.dimensions.size()) +
                 " dimensions");
      for (std::size_t i = 1; i < 3; ++i)
        if (in.dimensions[i] > limits::kMaxImageSide)
          fail(dims[i], path + ".dimensions[" + std::to_string(i) + "]",
               "expected an image side from 1 to " + std::to_string(limits::kMaxImageSide) + ", got " +
                   std::to_string(in.dimensions[i]));
      channels = in.dimensions[0];
      long want = in.color_mode == "GRAY" ? 1 : 3;
      if (channels != want)
        fail(dims, path + ".dimensions[0]",
             "expected " + std::to_string(want) + " channels for color_mode " + in.color_mode + ", got " +
                 std::to_string(channels));
    } else if (n["color_mode"].IsDefined()) {
      fail(n["color_mode"], path + ".color_mode", "only image inputs have a color_mode");
    }
    long sequence = 0;
    if (in.type == "text") {
      // One dimension: the maximum sequence length in tokens (positions).
      if (in.dimensions.size() != 1)
        fail(dims, path + ".dimensions",
             "expected one dimension for an input of type text, its maximum sequence "
             "length, got " +
                 std::to_string(in.dimensions.size()) + " dimensions");
      if (in.dimensions[0] > limits::kMaxSequenceLength)
        fail(dims[0], path + ".dimensions[0]",
             "expected a sequence length from 1 to " + std::to_string(limits::kMaxSequenceLength) + ", got " +
                 std::to_string(in.dimensions[0]));
      sequence = in.dimensions[0];
    }
    in.steps = steps(n, path + ".steps", true, in.type, channels, sequence);
    return in;
  }

  // `inputs` are the manifest's inputs, parsed before: a generation output is checked against its text input.
  OutputSpec output(const YAML::Node& n, const std::string& path, std::size_t index, std::size_t count,
                    const std::vector<InputSpec>& inputs) const {
    check_map(n, path, {"name", "type", "labels", "steps"});
    OutputSpec out;
    out.name = entry_name(n, path, "output", index, count);
    const YAML::Node type = required(n, "type", path + ".type");
    out.type = one_of(type, path + ".type",
                      {"classification", "detection", "segmentation", "text_classification", "generation"});
    if (n["labels"].IsDefined() && !n["labels"].IsNull()) {
      if (out.type == "generation")
        fail(n["labels"], path + ".labels", "an output of type generation has no labels (its tokens are text)");
      out.labels = path_of(n["labels"], path + ".labels");
    }
    const InputSpec* text = nullptr;
    if (out.type == "generation") {
      std::vector<std::string> texts;
      for (const auto& in : inputs)
        if (in.type == "text") {
          texts.push_back(in.name);
          text = &in;
        }
      if (texts.size() != 1)
        fail(type, path + ".type",
             "expected exactly one input of type text for an output of type generation, got " +
                 std::to_string(texts.size()) + (texts.empty() ? std::string() : " (" + util::join(texts, ", ") + ")"));
    }
    out.steps = steps(n, path + ".steps", false, out.type, 0, 0);
    if (text) {
      // The prompt (padded or truncated to pad_truncate.length, when the input has that step) and the new tokens
      // must fit the model's positions.
      long prompt = 0;
      for (const auto& s : text->steps)
        if (s.op == "pad_truncate") prompt = std::stol(s.params.at("length"));
      const long new_tokens = std::stol(out.steps[0].params.at("max_new_tokens"));
      if (new_tokens + prompt > text->dimensions[0]) {
        const YAML::Node generate = n["steps"][0]["generate"];
        const YAML::Node at =
            generate.IsMap() && generate["max_new_tokens"].IsDefined() ? generate["max_new_tokens"] : n["steps"][0];
        const std::string limit = " to be at most dimensions[0] of input '" + text->name +
                                  "', its maximum sequence "
                                  "length " +
                                  std::to_string(text->dimensions[0]) + ", got ";
        fail(at, path + ".steps[0].generate.max_new_tokens",
             prompt == 0
                 ? "expected max_new_tokens" + limit + std::to_string(new_tokens)
                 : "expected max_new_tokens + pad_truncate.length (the prompt)" + limit + std::to_string(new_tokens) +
                       " + " + std::to_string(prompt) + " = " + std::to_string(new_tokens + prompt));
      }
    }
    return out;
  }

  Manifest parse(const YAML::Node& root) const {
    if (!root.IsMap()) fail(root, "", "expected a mapping of manifest fields at the top level, got " + describe(root));
    check_map(root, "",
              {"name", "version", "description", "framework", "model", "frameworks", "precisions", "inputs", "outputs",
               "attributes"});
    Manifest m;
    m.name = string_of(required(root, "name", "name"), "name", limits::kMaxNameLength);

    const YAML::Node version = required(root, "version", "version");
    m.version = string_of(version, "version", limits::kMaxNameLength);
    if (const std::string why = semver_problem(m.version); !why.empty())
      fail(version, "version",
           "expected a semantic version MAJOR.MINOR.PATCH (e.g. 1.0.0), got " + shown(m.version) + ": " + why);

    if (root["description"].IsDefined() && !root["description"].IsNull())
      m.description = string_of(root["description"], "description", limits::kMaxTextLength, true);

    const YAML::Node list = root["frameworks"];
    if (list.IsDefined()) {
      // List form; the single form's keys alongside would leave it ambiguous which graph a framework uses.
      for (const char* key : {"framework", "model"})
        if (root[key].IsDefined())
          fail(root[key], key,
               std::string("'") + key +
                   "' cannot be combined with 'frameworks' (give every graph "
                   "as a frameworks entry {name, version, graph_path, checksum})");
      if (!list.IsSequence() || list.size() == 0)
        fail(list, "frameworks",
             "expected a non-empty list of {name, version, graph_path, checksum}, got " + describe(list));
      check_list_size(list, "frameworks");
      for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string at = "frameworks[" + std::to_string(i) + "]";
        const YAML::Node e = list[i];
        check_map(e, at, {"name", "version", "graph_path", "checksum"});
        GraphSpec g;
        g.line = e.Mark().line + 1;
        g.framework = string_of(required(e, "name", at + ".name"), at + ".name", limits::kMaxNameLength);
        for (const auto& other : m.graphs)
          if (other.framework == g.framework)
            fail(e["name"], at + ".name",
                 "duplicate framework '" + g.framework + "' (also at line " + std::to_string(other.line) +
                     "); each framework has one graph");
        g.constraint = constraint(required(e, "version", at + ".version"), at + ".version");
        g.graph_path = path_of(required(e, "graph_path", at + ".graph_path"), at + ".graph_path");
        g.checksum = checksum(required(e, "checksum", at + ".checksum"), at + ".checksum");
        m.graphs.push_back(std::move(g));
      }
    } else {
      const YAML::Node fw = required(root, "framework", "framework");
      check_map(fw, "framework", {"name", "version"});
      GraphSpec g;
      g.line = fw.Mark().line + 1;
      g.framework = string_of(required(fw, "name", "framework.name"), "framework.name", limits::kMaxNameLength);
      g.constraint = constraint(required(fw, "version", "framework.version"), "framework.version");
      const YAML::Node model = required(root, "model", "model");
      check_map(model, "model", {"graph_path", "checksum"});
      g.graph_path = path_of(required(model, "graph_path", "model.graph_path"), "model.graph_path");
      g.checksum = checksum(required(model, "checksum", "model.checksum"), "model.checksum");
      m.graphs.push_back(std::move(g));
    }

    const YAML::Node precisions = root["precisions"];
    if (precisions.IsDefined() && !precisions.IsNull()) {
      if (!precisions.IsSequence() || precisions.size() == 0)
        fail(precisions, "precisions",
             "expected a non-empty list of fp32, fp16, bf16, got " +
                 (precisions.IsSequence() ? std::string("an empty list") : describe(precisions)));
      check_list_size(precisions, "precisions");
      for (std::size_t i = 0; i < precisions.size(); ++i) {
        const std::string at = "precisions[" + std::to_string(i) + "]";
        const std::string p = one_of(precisions[i], at, {"fp32", "fp16", "bf16"});
        const auto seen = std::find(m.precisions.begin(), m.precisions.end(), p);
        if (seen != m.precisions.end())
          fail(
              precisions[i], at,
              "duplicate precision '" + p + "' (also precisions[" + std::to_string(seen - m.precisions.begin()) + "])");
        m.precisions.push_back(p);
      }
    } else {
      m.precisions = {"fp32"};
    }

    const YAML::Node inputs = required(root, "inputs", "inputs");
    if (!inputs.IsSequence() || inputs.size() == 0)
      fail(inputs, "inputs", "expected a non-empty list of inputs, got " + describe(inputs));
    check_list_size(inputs, "inputs");
    std::vector<std::string> names;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      m.inputs.push_back(input(inputs[i], "inputs[" + std::to_string(i) + "]", i, inputs.size()));
      names.push_back(m.inputs.back().name);
      check_unique_names(inputs, "inputs", names);
    }

    const YAML::Node outputs = required(root, "outputs", "outputs");
    if (!outputs.IsSequence() || outputs.size() == 0)
      fail(outputs, "outputs", "expected a non-empty list of outputs, got " + describe(outputs));
    check_list_size(outputs, "outputs");
    names.clear();
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      m.outputs.push_back(output(outputs[i], "outputs[" + std::to_string(i) + "]", i, outputs.size(), m.inputs));
      names.push_back(m.outputs.back().name);
      check_unique_names(outputs, "outputs", names);
    }

    const YAML::Node attrs = root["attributes"];
    if (attrs.IsDefined() && !attrs.IsNull()) {
      if (!attrs.IsMap()) fail(attrs, "attributes", "expected a mapping, got " + describe(attrs));
      for (const auto& kv : attrs) {
        std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
        if (key.size() > limits::kMaxNameLength)
          fail(kv.first, "attributes",
               "expected keys of at most " + std::to_string(limits::kMaxNameLength) + " characters, got " +
                   std::to_string(key.size()) + " (" + shown(key) + ")");
        // Attributes are free-form; nested values (e.g. accuracy tables) are kept as flow YAML text.
        if (kv.second.IsScalar() && (key == "prompts" || key == "dataset_path")) {
          m.attributes[key] = path_of(kv.second, "attributes." + key, true);  // files the evaluation reads
        } else if (kv.second.IsScalar()) {
          m.attributes[key] = string_of(kv.second, "attributes." + key, limits::kMaxTextLength, true);
        } else if (!kv.second.IsNull()) {
          YAML::Emitter e;
          e << YAML::Flow << kv.second;
          m.attributes[key] = e.c_str();
          if (m.attributes[key].size() > limits::kMaxTextLength)
            fail(kv.second, "attributes." + key,
                 "expected at most " + std::to_string(limits::kMaxTextLength) + " characters, got " +
                     std::to_string(m.attributes[key].size()));
        } else {
          m.attributes[key] = "";
        }
      }
    }
    return m;
  }

 private:
  std::string file_;
};

}  // namespace

ManifestError::ManifestError(std::string file, int line, std::string field, const std::string& message)
    : std::runtime_error(format_error(file, line, field, message)),
      file_(std::move(file)),
      line_(line),
      field_(std::move(field)) {}

const GraphSpec& Manifest::graph_for(const std::string& framework) const {
  for (const GraphSpec& g : graphs)
    if (g.framework == framework) return g;
  const auto names = framework_names();
  throw std::runtime_error("manifest " + path.string() + " (model " + name + " " + version +
                           ") has no graph for framework '" + framework +
                           "'; it has: " + (names.empty() ? std::string("none") : util::join(names, ", ")));
}

GraphSpec& Manifest::graph_for(const std::string& framework) {
  return const_cast<GraphSpec&>(std::as_const(*this).graph_for(framework));
}

bool Manifest::has_framework(const std::string& framework) const {
  return std::any_of(graphs.begin(), graphs.end(), [&](const GraphSpec& g) { return g.framework == framework; });
}

std::vector<std::string> Manifest::framework_names() const {
  std::vector<std::string> names;
  for (const GraphSpec& g : graphs) names.push_back(g.framework);
  return names;
}

const std::string& Manifest::default_framework() const {
  if (graphs.empty()) throw std::logic_error("manifest " + path.string() + " has no framework graph");
  return graphs.front().framework;
}

std::filesystem::path Manifest::resolve(const std::string& relative) const {
  if (relative.empty()) return {};
  std::filesystem::path p(relative);
  if (p.is_absolute()) return p;
  return (path.parent_path() / p).lexically_normal();
}

std::filesystem::path Manifest::resolved_graph_path(const std::string& framework) const {
  const std::string& graph_path = graph_for(framework).graph_path;
  if (graph_path.find("://") != std::string::npos) return graph_path;  // a URL
  return resolve(graph_path);
}

std::filesystem::path Manifest::resolved_labels_path(std::size_t i) const {
  if (i >= outputs.size()) return {};
  return resolve(outputs[i].labels);
}

const InputSpec* Manifest::find_input(std::string_view wanted) const {
  for (const InputSpec& in : inputs)
    if (in.name == wanted) return &in;
  return nullptr;
}

const OutputSpec* Manifest::find_output(std::string_view wanted) const {
  for (const OutputSpec& out : outputs)
    if (out.name == wanted) return &out;
  return nullptr;
}

bool is_generation(const Manifest& manifest) {
  return std::any_of(manifest.outputs.begin(), manifest.outputs.end(),
                     [](const OutputSpec& o) { return o.type == "generation"; });
}

std::string ProcessingStep::param(std::string_view key, std::string_view fallback) const {
  const auto it = params.find(std::string(key));
  return it == params.end() ? std::string(fallback) : it->second;
}

Manifest parse_manifest(const std::string& yaml_text, const std::filesystem::path& file) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw ManifestError(file.string(), e.mark.line + 1, "", "malformed YAML: " + e.msg);
  }
  Manifest m = Parser(file.string()).parse(root);
  m.path = file;
  m.source_yaml = yaml_text;
  return m;
}

namespace {

// The text of a manifest file: at most manifest_limits::kMaxFileBytes (a manifest is a page of YAML; a larger file
// is a mistake, and its text would be stored with every evaluation).
std::string read_manifest_text(const std::filesystem::path& file) {
  try {
    // A regular file only (a FIFO would block the open, /dev/zero is endless), read no further than its size.
    RegularFile in(file, "the manifest file");
    if (in.size() > manifest_limits::kMaxFileBytes)
      throw ManifestError(file.string(), 0, "",
                          "expected a manifest of at most " + std::to_string(manifest_limits::kMaxFileBytes) +
                              " bytes, the file has " + std::to_string(in.size()));
    std::string text(static_cast<std::size_t>(in.size()), '\0');
    if (!text.empty()) in.read_exactly(text.data(), text.size(), "the manifest");
    return text;
  } catch (const ManifestError&) {
    throw;
  } catch (const std::exception& e) {
    throw ManifestError(file.string(), 0, "", e.what());  // "the manifest file is not a regular file (it is ...)"
  }
}

// The model name an invalid manifest claims, when its YAML has a usable top-level `name` ("" otherwise).
std::string claimed_name(const std::string& text) {
  try {
    const YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) return "";
    const YAML::Node n = root["name"];
    if (n.IsDefined() && n.IsScalar() && n.Scalar().size() <= manifest_limits::kMaxNameLength) return n.Scalar();
  } catch (const std::exception&) {
  }
  return "";
}

}  // namespace

Manifest load_manifest(const std::filesystem::path& file) { return parse_manifest(read_manifest_text(file), file); }

namespace {

// scan_zoo(), or with `strict` load_zoo()'s behaviour: the first problem is thrown instead of collected.
Zoo scan(const std::filesystem::path& dir, bool strict) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw ManifestError(dir.string(), 0, "", "not a directory (expected a model-zoo folder of *.yaml manifests)");
  auto list_error = [&] {
    return ManifestError(dir.string(), 0, "", "cannot list the model-zoo folder: " + ec.message());
  };
  std::vector<fs::path> files;
  fs::directory_iterator it(dir, ec), end;
  if (ec) throw list_error();
  for (; it != end; it.increment(ec)) {
    if (ec) throw list_error();
    const auto ext = it->path().extension();
    if (ext == ".yaml" || ext == ".yml") files.push_back(it->path());
  }
  if (ec) throw list_error();
  std::sort(files.begin(), files.end());  // deterministic: models and problems always in the same order

  Zoo zoo;
  auto problem = [&](const ManifestError& e, const std::string& name) {
    if (strict) throw e;
    zoo.problems.push_back({fs::path(e.file()), e.what(), name});
  };
  for (const auto& f : files) {
    // A *.yaml that is not a readable regular file (a symlink loop, a dangling link, a folder) is a problem to
    // report, not a reason to fail the whole zoo or to skip silently.
    std::error_code sec;
    const fs::file_status st = fs::status(f, sec);
    if (sec && sec != std::errc::no_such_file_or_directory) {
      problem(ManifestError(f.string(), 0, "", "cannot read the manifest file: " + sec.message()), "");
      continue;
    }
    if (!fs::is_regular_file(st)) {
      problem(ManifestError(f.string(), 0, "",
                            fs::exists(st) ? "not a regular file"
                                           : "cannot read the manifest file: it does not exist "
                                             "(a dangling symbolic link?)"),
              "");
      continue;
    }
    std::string text;
    try {
      text = read_manifest_text(f);
      zoo.models.push_back(parse_manifest(text, f));
    } catch (const ManifestError& e) {
      problem(e, claimed_name(text));
    } catch (const std::exception& e) {  // yaml-cpp's own errors, e.g. nesting too deep
      problem(ManifestError(f.string(), 0, "", std::string("cannot parse the manifest: ") + e.what()),
              claimed_name(text));
    }
  }

  // By name, then version; files claiming the same name and version stay in path order (stable sort).
  std::stable_sort(zoo.models.begin(), zoo.models.end(), [](const Manifest& a, const Manifest& b) {
    auto la = util::to_lower(a.name), lb = util::to_lower(b.name);
    if (la != lb) return la < lb;
    return version_less(a.version, b.version);
  });
  // Name and version identify a model (SPEC §5); two files claiming the same one would make lookups ambiguous:
  // the first file (by path) is kept, the others are problems.
  std::vector<Manifest> unique;
  for (auto& m : zoo.models) {
    if (!unique.empty() && util::to_lower(unique.back().name) == util::to_lower(m.name) &&
        unique.back().version == m.version) {
      problem(ManifestError(m.path.string(), 0, "name",
                            "model " + m.name + " " + m.version + " is also defined in " + unique.back().path.string() +
                                "; name and version must be unique in a zoo"),
              m.name);
      continue;
    }
    unique.push_back(std::move(m));
  }
  zoo.models = std::move(unique);
  std::stable_sort(zoo.problems.begin(), zoo.problems.end(),
                   [](const ZooProblem& a, const ZooProblem& b) { return a.file < b.file; });
  return zoo;
}

}  // namespace

Zoo scan_zoo(const std::filesystem::path& dir) { return scan(dir, false); }

std::vector<Manifest> load_zoo(const std::filesystem::path& dir) { return scan(dir, true).models; }

const Manifest& find_model(const Zoo& zoo, const std::string& name, const std::string& version) {
  for (const auto& p : zoo.problems)
    if ((!p.name.empty() && util::to_lower(p.name) == util::to_lower(name)) ||
        util::to_lower(p.file.stem().string()) == util::to_lower(name))
      throw std::runtime_error("model '" + name + "': its manifest " + p.file.string() + " is invalid: " + p.message);
  try {
    return find_model(zoo.models, name, version);
  } catch (const std::runtime_error& e) {
    if (zoo.problems.empty()) throw;
    std::vector<std::string> bad;
    for (const auto& p : zoo.problems) bad.push_back(p.file.string());
    throw std::runtime_error(std::string(e.what()) + " (" + std::to_string(bad.size()) +
                             " manifest(s) of the zoo could not be read: " + util::join(bad, ", ") + ")");
  }
}

const Manifest& find_model(const std::vector<Manifest>& zoo, const std::string& name, const std::string& version) {
  const Manifest* best = nullptr;
  std::vector<std::string> versions;
  for (const auto& m : zoo) {
    if (util::to_lower(m.name) != util::to_lower(name)) continue;
    versions.push_back(m.version);
    if (version.empty()) {
      // The zoo is usually sorted, but do not rely on it: pick the highest version.
      if (!best || version_less(best->version, m.version)) best = &m;
    } else if (m.version == version) {
      best = &m;
    }
  }
  if (best) return *best;
  if (!versions.empty())
    throw std::runtime_error("model '" + name + "' has no version " + version +
                             "; known versions: " + util::join(versions, ", "));
  std::vector<std::string> names;
  for (const auto& m : zoo)
    if (std::find(names.begin(), names.end(), m.name) == names.end()) names.push_back(m.name);
  throw std::runtime_error("unknown model '" + name + "'; known models: " +
                           (names.empty() ? std::string("(none: the zoo is empty)") : util::join(names, ", ")));
}

std::string sha256_file(const std::filesystem::path& file, const std::atomic<int>* interrupt) {
  // Only a regular file, and only the bytes it had when opened: /dev/zero or a FIFO named as a graph or tokenizer
  // would otherwise be hashed forever (issue 31).
  RegularFile in(file, file.string());
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("OpenSSL could not start a SHA-256 digest");
  std::vector<char> buf(1 << 20);
  while (in.position() < in.size()) {
    if (interrupt != nullptr && interrupt->load() != 0)
      throw Interrupted("computing the SHA-256 of " + file.string() + " stopped after " +
                        std::to_string(in.position()) + " of " + std::to_string(in.size()) +
                        " bytes: the interrupt flag was set");
    const std::size_t got = in.read(buf.data(), buf.size());
    if (got == 0)
      throw std::runtime_error("read error in " + file.string() + " while computing its SHA-256: the file shrank to " +
                               std::to_string(in.position()) + " bytes while it was read (it had " +
                               std::to_string(in.size()) + ")");
    if (EVP_DigestUpdate(ctx.get(), buf.data(), got) != 1)
      throw std::runtime_error("OpenSSL SHA-256 update failed for " + file.string());
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), md, &len) != 1)
    throw std::runtime_error("OpenSSL SHA-256 final failed for " + file.string());
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 0xf];
  }
  return out;
}

void verify_checksum(const Manifest& manifest, const std::string& framework, const std::atomic<int>* interrupt) {
  const GraphSpec& graph = manifest.graph_for(framework);
  const auto file = manifest.resolved_graph_path(framework);
  std::error_code ec;
  // Missing: say how to export it. Anything else that is not a regular file (a folder, /dev/zero, a FIFO) is refused
  // by sha256_file(), naming what it is.
  if (!std::filesystem::exists(std::filesystem::status(file, ec))) {
    std::string cmd = "scripts/export_zoo.py --models " + file.stem().string();
    if (!file.parent_path().empty()) cmd += " --out " + file.parent_path().string();
    throw std::runtime_error("model file " + file.string() + " of " + manifest.name + " " + manifest.version +
                             " (manifest " + manifest.path.string() + ") is missing; export it with `" + cmd +
                             "` (run by the python3 that has torch, e.g. /usr/bin/python3)");
  }
  const std::string actual = "sha256:" + sha256_file(file, interrupt);
  if (actual != graph.checksum)
    throw std::runtime_error("checksum mismatch for " + file.string() + " (framework " + framework + "): manifest " +
                             manifest.path.string() + " expects " + graph.checksum + ", the file has " + actual +
                             " (a different torch version exports other bytes: re-export with "
                             "`scripts/export_zoo.py --models " +
                             file.stem().string() + " --record`, or fix the manifest)");
}

}  // namespace xsp
