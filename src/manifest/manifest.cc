// Model manifests (SPEC §5): parsing, validation, model zoo, checksums.
#include "xsp/manifest/manifest.h"

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

#include "xsp/manifest/semver.h"

namespace xsp {
namespace {

// "FILE:LINE: field 'x': MESSAGE"; the line is left out when unknown (0) and the field when there is none
// (e.g. an unreadable file), so that messages never show ":0" or "field ''".
std::string format_error(const std::string& file, int line, const std::string& field, const std::string& msg) {
  std::string s = file;
  if (line > 0) s += ":" + std::to_string(line);
  s += ": ";
  if (!field.empty()) s += "field '" + field + "': ";
  return s + msg;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
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
    if (n.IsScalar()) return "'" + n.Scalar() + "'";
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
        fail(kv.first, path, "unknown key '" + key + "' (a typo?); expected one of: " + join(names, ", "));
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

  std::string string_of(const YAML::Node& n, const std::string& path, bool allow_empty = false) const {
    if (!n.IsScalar() || (!allow_empty && n.Scalar().empty()))
      fail(n, path, std::string("expected a ") + (allow_empty ? "" : "non-empty ") + "string, got " + describe(n));
    return n.Scalar();
  }

  std::string one_of(const YAML::Node& n, const std::string& path, const std::vector<std::string>& choices) const {
    std::string v = string_of(n, path);
    if (std::find(choices.begin(), choices.end(), v) == choices.end())
      fail(n, path, "expected one of " + join(choices, ", ") + ", got '" + v + "'");
    return v;
  }

  long positive_int(const YAML::Node& n, const std::string& path) const {
    long v = 0;
    if (n.IsScalar()) {
      const std::string& s = n.Scalar();
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec == std::errc() && p == s.data() + s.size() && v > 0) return v;
    }
    fail(n, path, "expected a positive integer, got " + describe(n));
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
    std::vector<double> out;
    for (std::size_t i = 0; i < n.size(); ++i) out.push_back(number(n[i], path + "[" + std::to_string(i) + "]"));
    return out;
  }

  // One step: a mapping with a single key, the op, whose value holds the parameters ({} or nothing when none).
  ProcessingStep step(const YAML::Node& n, const std::string& path, bool input_side, long channels) const {
    static const std::vector<std::string> input_ops = {"decode", "resize", "center_crop", "normalize"};
    static const std::vector<std::string> output_ops = {"softmax", "top_k"};
    const auto& ops = input_side ? input_ops : output_ops;
    if (!n.IsMap() || n.size() != 1)
      fail(n, path, "expected a mapping with one key, the step (one of " + join(ops, ", ") + "), got " + describe(n));
    ProcessingStep s;
    s.line = n.Mark().line + 1;
    const YAML::Node key = n.begin()->first;
    const YAML::Node args = n.begin()->second;
    s.op = key.IsScalar() ? key.Scalar() : "";
    const std::string at = path + "." + s.op;
    if (std::find(ops.begin(), ops.end(), s.op) == ops.end())
      fail(key, path, std::string("unknown ") + (input_side ? "pre" : "post") + "-processing step '" + s.op +
                          "'; expected one of " + join(ops, ", "));
    // A step without parameters may be written "decode: {}" or "decode:".
    const YAML::Node p = args.IsNull() ? YAML::Node(YAML::NodeType::Map) : args;
    auto scalar = [&](const std::string& k) { s.params[k] = p[k].Scalar(); };

    if (s.op == "decode" || s.op == "softmax") {
      check_map(p, at, {});
    } else if (s.op == "resize") {
      check_map(p, at, {"shorter_side", "method"});
      positive_int(required(p, "shorter_side", at + ".shorter_side"), at + ".shorter_side");
      scalar("shorter_side");
      if (p["method"].IsDefined())
        s.params["method"] = one_of(p["method"], at + ".method", {"bilinear", "nearest", "bicubic", "area"});
      else
        s.params["method"] = "bilinear";
    } else if (s.op == "center_crop") {
      check_map(p, at, {"size"});
      positive_int(required(p, "size", at + ".size"), at + ".size");
      scalar("size");
    } else if (s.op == "normalize") {
      check_map(p, at, {"mean", "std", "scale"});
      auto mean = number_list(required(p, "mean", at + ".mean"), at + ".mean");
      auto stdv = number_list(required(p, "std", at + ".std"), at + ".std");
      if (mean.size() != stdv.size())
        fail(p["std"], at + ".std", "expected as many values as mean (" + std::to_string(mean.size()) + "), got " +
                                        std::to_string(stdv.size()));
      // One value per channel, or one for all channels.
      if (channels > 0 && mean.size() != 1 && static_cast<long>(mean.size()) != channels)
        fail(p["mean"], at + ".mean", "expected 1 or " + std::to_string(channels) + " values (one per channel), got " +
                                          std::to_string(mean.size()));
      for (std::size_t i = 0; i < stdv.size(); ++i)
        if (stdv[i] == 0) fail(p["std"][i], at + ".std[" + std::to_string(i) + "]", "expected a non-zero number, got 0");
      s.list_params["mean"] = mean;
      s.list_params["std"] = stdv;
      if (p["scale"].IsDefined()) {
        if (number(p["scale"], at + ".scale") <= 0)
          fail(p["scale"], at + ".scale", "expected a number > 0, got " + describe(p["scale"]));
        scalar("scale");
      } else {
        s.params["scale"] = "1";
      }
    } else if (s.op == "top_k") {
      check_map(p, at, {"k"});
      positive_int(required(p, "k", at + ".k"), at + ".k");
      scalar("k");
    }
    return s;
  }

  std::string constraint(const YAML::Node& n, const std::string& path) const {
    std::string c = string_of(n, path);
    try {
      check_constraint(c);
    } catch (const std::invalid_argument& e) {
      fail(n, path, e.what());
    }
    return c;
  }

  std::string checksum(const YAML::Node& n, const std::string& path) const {
    std::string c = string_of(n, path);
    static const std::regex checksum_re("^sha256:[0-9a-f]{64}$");
    if (!std::regex_match(c, checksum_re))
      fail(n, path, "expected 'sha256:' followed by 64 lower-case hex digits, got '" + c + "'");
    return c;
  }

  std::vector<ProcessingStep> steps(const YAML::Node& map, const std::string& path, bool input_side,
                                    long channels) const {
    std::vector<ProcessingStep> out;
    const YAML::Node n = map["steps"];
    if (!n.IsDefined() || n.IsNull()) return out;
    if (!n.IsSequence()) fail(n, path, "expected a list of steps, got " + describe(n));
    for (std::size_t i = 0; i < n.size(); ++i)
      out.push_back(step(n[i], path + "[" + std::to_string(i) + "]", input_side, channels));
    return out;
  }

  InputSpec input(const YAML::Node& n, const std::string& path) const {
    check_map(n, path, {"type", "element_type", "layout", "color_mode", "dimensions", "steps"});
    InputSpec in;
    in.type = one_of(required(n, "type", path + ".type"), path + ".type", {"image", "tensor"});
    in.element_type = one_of(required(n, "element_type", path + ".element_type"), path + ".element_type", {"float32"});
    in.layout = n["layout"].IsDefined() ? one_of(n["layout"], path + ".layout", {"NCHW"}) : "NCHW";
    const YAML::Node dims = required(n, "dimensions", path + ".dimensions");
    if (!dims.IsSequence() || dims.size() == 0)
      fail(dims, path + ".dimensions", "expected a non-empty list of positive integers, got " + describe(dims));
    for (std::size_t i = 0; i < dims.size(); ++i)
      in.dimensions.push_back(positive_int(dims[i], path + ".dimensions[" + std::to_string(i) + "]"));
    long channels = 0;
    if (in.type == "image") {
      in.color_mode = n["color_mode"].IsDefined() ? one_of(n["color_mode"], path + ".color_mode", {"RGB", "BGR", "GRAY"})
                                                  : "RGB";
      // An image is one sample of shape [C, H, W]; C must agree with the colour mode or the
      // pre-processing would feed the model the wrong number of planes.
      if (in.dimensions.size() != 3)
        fail(dims, path + ".dimensions", "expected [channels, height, width] for an image, got " +
                                             std::to_string(in.dimensions.size()) + " dimensions");
      channels = in.dimensions[0];
      long want = in.color_mode == "GRAY" ? 1 : 3;
      if (channels != want)
        fail(dims, path + ".dimensions[0]", "expected " + std::to_string(want) + " channels for color_mode " +
                                                in.color_mode + ", got " + std::to_string(channels));
    } else if (n["color_mode"].IsDefined()) {
      fail(n["color_mode"], path + ".color_mode", "only image inputs have a color_mode");
    }
    in.steps = steps(n, path + ".steps", true, channels);
    return in;
  }

  OutputSpec output(const YAML::Node& n, const std::string& path) const {
    check_map(n, path, {"type", "labels", "steps"});
    OutputSpec out;
    out.type = one_of(required(n, "type", path + ".type"), path + ".type", {"classification"});
    if (n["labels"].IsDefined() && !n["labels"].IsNull()) out.labels = string_of(n["labels"], path + ".labels");
    out.steps = steps(n, path + ".steps", false, 0);
    return out;
  }

  Manifest parse(const YAML::Node& root) const {
    if (!root.IsMap()) fail(root, "", "expected a mapping of manifest fields at the top level, got " + describe(root));
    check_map(root, "", {"name", "version", "description", "framework", "model", "frameworks", "inputs", "outputs",
                         "attributes"});
    Manifest m;
    m.name = string_of(required(root, "name", "name"), "name");

    const YAML::Node version = required(root, "version", "version");
    m.version = string_of(version, "version");
    static const std::regex semver_re(
        R"(^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$)");
    if (!std::regex_match(m.version, semver_re))
      fail(version, "version", "expected a semantic version MAJOR.MINOR.PATCH (e.g. 1.0.0), got '" + m.version + "'");

    if (root["description"].IsDefined() && !root["description"].IsNull())
      m.description = string_of(root["description"], "description", true);

    const YAML::Node list = root["frameworks"];
    if (list.IsDefined()) {
      // List form; the single form's keys alongside would leave it ambiguous which graph a framework uses.
      for (const char* key : {"framework", "model"})
        if (root[key].IsDefined())
          fail(root[key], key, std::string("'") + key + "' cannot be combined with 'frameworks' (give every graph "
                               "as a frameworks entry {name, version, graph_path, checksum})");
      if (!list.IsSequence() || list.size() == 0)
        fail(list, "frameworks", "expected a non-empty list of {name, version, graph_path, checksum}, got " +
                                     describe(list));
      for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string at = "frameworks[" + std::to_string(i) + "]";
        const YAML::Node e = list[i];
        check_map(e, at, {"name", "version", "graph_path", "checksum"});
        GraphSpec g;
        g.line = e.Mark().line + 1;
        g.framework = string_of(required(e, "name", at + ".name"), at + ".name");
        for (const auto& other : m.graphs)
          if (other.framework == g.framework)
            fail(e["name"], at + ".name", "duplicate framework '" + g.framework + "' (also at line " +
                                              std::to_string(other.line) + "); each framework has one graph");
        g.constraint = constraint(required(e, "version", at + ".version"), at + ".version");
        g.graph_path = string_of(required(e, "graph_path", at + ".graph_path"), at + ".graph_path");
        g.checksum = checksum(required(e, "checksum", at + ".checksum"), at + ".checksum");
        m.graphs.push_back(std::move(g));
      }
    } else {
      const YAML::Node fw = required(root, "framework", "framework");
      check_map(fw, "framework", {"name", "version"});
      GraphSpec g;
      g.line = fw.Mark().line + 1;
      g.framework = string_of(required(fw, "name", "framework.name"), "framework.name");
      g.constraint = constraint(required(fw, "version", "framework.version"), "framework.version");
      const YAML::Node model = required(root, "model", "model");
      check_map(model, "model", {"graph_path", "checksum"});
      g.graph_path = string_of(required(model, "graph_path", "model.graph_path"), "model.graph_path");
      g.checksum = checksum(required(model, "checksum", "model.checksum"), "model.checksum");
      m.graphs.push_back(std::move(g));
    }

    const YAML::Node inputs = required(root, "inputs", "inputs");
    if (!inputs.IsSequence() || inputs.size() == 0)
      fail(inputs, "inputs", "expected a non-empty list of inputs, got " + describe(inputs));
    for (std::size_t i = 0; i < inputs.size(); ++i)
      m.inputs.push_back(input(inputs[i], "inputs[" + std::to_string(i) + "]"));

    const YAML::Node outputs = required(root, "outputs", "outputs");
    if (!outputs.IsSequence() || outputs.size() == 0)
      fail(outputs, "outputs", "expected a non-empty list of outputs, got " + describe(outputs));
    for (std::size_t i = 0; i < outputs.size(); ++i)
      m.outputs.push_back(output(outputs[i], "outputs[" + std::to_string(i) + "]"));

    const YAML::Node attrs = root["attributes"];
    if (attrs.IsDefined() && !attrs.IsNull()) {
      if (!attrs.IsMap()) fail(attrs, "attributes", "expected a mapping, got " + describe(attrs));
      for (const auto& kv : attrs) {
        std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
        // Attributes are free-form; nested values (e.g. accuracy tables) are kept as flow YAML text.
        if (kv.second.IsScalar()) {
          m.attributes[key] = kv.second.Scalar();
        } else if (!kv.second.IsNull()) {
          YAML::Emitter e;
          e << YAML::Flow << kv.second;
          m.attributes[key] = e.c_str();
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
                           ") has no graph for framework '" + framework + "'; it has: " +
                           (names.empty() ? std::string("none") : join(names, ", ")));
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

std::filesystem::path Manifest::resolved_graph_path(const std::string& framework) const {
  const std::string& graph_path = graph_for(framework).graph_path;
  std::filesystem::path g(graph_path);
  if (g.is_absolute() || graph_path.find("://") != std::string::npos) return g;
  return (path.parent_path() / g).lexically_normal();
}

std::filesystem::path Manifest::resolved_labels_path(std::size_t i) const {
  if (i >= outputs.size() || outputs[i].labels.empty()) return {};
  std::filesystem::path l(outputs[i].labels);
  if (l.is_absolute()) return l;
  return (path.parent_path() / l).lexically_normal();
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

Manifest load_manifest(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ManifestError(file.string(), 0, "", "cannot read the manifest file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_manifest(text.str(), file);
}

std::vector<Manifest> load_zoo(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw ManifestError(dir.string(), 0, "", "not a directory (expected a model-zoo folder of *.yaml manifests)");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());  // deterministic: the first invalid file reported is always the same
  std::vector<Manifest> zoo;
  for (const auto& f : files) zoo.push_back(load_manifest(f));

  auto by_version = [](const Manifest& a, const Manifest& b) {
    auto va = parse_semver(a.version), vb = parse_semver(b.version);
    return *va < *vb;  // validated as semver when parsed
  };
  std::sort(zoo.begin(), zoo.end(), [&](const Manifest& a, const Manifest& b) {
    auto la = lower(a.name), lb = lower(b.name);
    if (la != lb) return la < lb;
    return by_version(a, b);
  });
  // Name and version identify a model (SPEC §5); two files claiming the same one would make lookups ambiguous.
  for (std::size_t i = 1; i < zoo.size(); ++i)
    if (lower(zoo[i].name) == lower(zoo[i - 1].name) && zoo[i].version == zoo[i - 1].version)
      throw ManifestError(zoo[i].path.string(), 0, "name",
                          "model " + zoo[i].name + " " + zoo[i].version + " is also defined in " +
                              zoo[i - 1].path.string() + "; name and version must be unique in a zoo");
  return zoo;
}

const Manifest& find_model(const std::vector<Manifest>& zoo, const std::string& name, const std::string& version) {
  const Manifest* best = nullptr;
  std::vector<std::string> versions;
  for (const auto& m : zoo) {
    if (lower(m.name) != lower(name)) continue;
    versions.push_back(m.version);
    if (version.empty()) {
      // The zoo is usually sorted, but do not rely on it: pick the highest version.
      if (!best || *parse_semver(best->version) < *parse_semver(m.version)) best = &m;
    } else if (m.version == version) {
      best = &m;
    }
  }
  if (best) return *best;
  if (!versions.empty())
    throw std::runtime_error("model '" + name + "' has no version " + version + "; known versions: " +
                             join(versions, ", "));
  std::vector<std::string> names;
  for (const auto& m : zoo)
    if (std::find(names.begin(), names.end(), m.name) == names.end()) names.push_back(m.name);
  throw std::runtime_error("unknown model '" + name + "'; known models: " +
                           (names.empty() ? std::string("(none: the zoo is empty)") : join(names, ", ")));
}

std::string sha256_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + file.string() + " to compute its SHA-256");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("OpenSSL could not start a SHA-256 digest");
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0 && EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<std::size_t>(in.gcount())) != 1)
      throw std::runtime_error("OpenSSL SHA-256 update failed for " + file.string());
  }
  if (in.bad()) throw std::runtime_error("read error in " + file.string() + " while computing its SHA-256");
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

void verify_checksum(const Manifest& manifest, const std::string& framework) {
  const GraphSpec& graph = manifest.graph_for(framework);
  const auto file = manifest.resolved_graph_path(framework);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
  {
    std::string cmd = "scripts/export_zoo.py --models " + file.stem().string();
    if (!file.parent_path().empty()) cmd += " --out " + file.parent_path().string();
    throw std::runtime_error("model file " + file.string() + " of " + manifest.name + " " + manifest.version +
                             " (manifest " + manifest.path.string() + ") is missing; export it with `" + cmd +
                             "` (run by the python3 that has torch, e.g. /usr/bin/python3)");
  }
  const std::string actual = "sha256:" + sha256_file(file);
  if (actual != graph.checksum)
    throw std::runtime_error("checksum mismatch for " + file.string() + " (framework " + framework +
                             "): manifest " + manifest.path.string() + " expects " + graph.checksum +
                             ", the file has " + actual +
                             " (a different torch version exports other bytes: re-export with "
                             "`scripts/export_zoo.py --models " +
                             file.stem().string() + " --record`, or fix the manifest)");
}

}  // namespace xsp
