#include "usage.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>

namespace xsp::cli {
namespace {

// The deepest command given ("xsp trace export ..." -> export).
CLI::App* deepest_command(CLI::App& app) {
  CLI::App* at = &app;
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (CLI::App* sub : at->get_subcommands())
      if (sub->parsed()) {
        at = sub;
        deeper = true;
        break;
      }
  }
  return at;
}

// "xsp", "xsp trace export".
std::string command_path(const CLI::App* at) {
  std::string path;
  for (const CLI::App* a = at; a != nullptr && a->get_parent() != nullptr; a = a->get_parent())
    path = " " + a->get_name() + path;
  return "xsp" + path;
}

std::string see_help(const std::string& where) { return " (see `" + where + " --help`)"; }

// "a, b or c"
std::string names_of(const std::vector<CLI::App*>& apps) {
  std::string out;
  for (std::size_t i = 0; i < apps.size(); ++i)
    out += (i == 0 ? "" : i + 1 == apps.size() ? " or " : ", ") + apps[i]->get_name();
  return out;
}

// The options `at` accepts: its own and, as global options fall through, those of the commands above it.
std::vector<std::string> option_names(const CLI::App* at) {
  std::vector<std::string> names;
  for (const CLI::App* a = at; a != nullptr; a = a->get_parent())
    for (const CLI::Option* o : a->get_options()) {
      for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
      for (const std::string& s : o->get_snames()) names.push_back("-" + s);
    }
  return names;
}

const CLI::Option* find_option(const CLI::App* at, const std::string& name) {
  for (const CLI::App* a = at; a != nullptr; a = a->get_parent())
    for (const CLI::Option* o : a->get_options())
      if (o->check_name(name)) return o;
  return nullptr;
}

bool looks_like_option(const std::string& arg) {
  return arg.size() > 1 && arg[0] == '-' && !std::isdigit(static_cast<unsigned char>(arg[1])) && arg[1] != '.';
}

// What a CLI11 type name means in words.
std::string expected_for(const std::string& type) {
  if (type == "INT") return "a whole number";
  if (type == "UINT") return "a whole number of at least 0";
  if (type == "FLOAT") return "a number";
  return type.empty() ? "a value" : type;
}

std::string missing_command(CLI::App& app, CLI::App* at) {
  const std::vector<CLI::App*> subs = at->get_subcommands([](CLI::App*) { return true; });
  const std::string where = command_path(at);
  std::vector<std::string> extra = app.remaining();
  for (const std::string& r : at->remaining()) extra.push_back(r);
  for (const std::string& r : extra)
    if (!r.empty() && r[0] != '-') {
      std::vector<std::string> names;
      for (const CLI::App* s : subs) names.push_back(s->get_name());
      const auto close = did_you_mean(r, names);
      return "unknown command '" + r + "' for " + where + "; expected " + names_of(subs) +
             (close ? "; did you mean '" + *close + "'?" : "") + see_help(where);
    }
  return where + " needs a command: " + names_of(subs) + see_help(where);
}

// An option or positional argument left over: an unknown option (with the closest known one) or an argument the
// command does not take. The first one on the command line is named.
std::string unexpected_argument(CLI::App& app, CLI::App* at, const std::vector<const char*>& argv) {
  const std::string where = command_path(at);
  const std::vector<std::string> left = app.remaining(true);
  const std::set<std::string> left_over(left.begin(), left.end());
  std::string first;
  for (std::size_t i = 1; i < argv.size() && first.empty(); ++i)
    if (left_over.count(argv[i]) != 0) first = argv[i];
  if (first.empty() && !left.empty()) first = left.front();
  if (looks_like_option(first)) {
    const std::string name = first.substr(0, first.find('='));
    const auto close = did_you_mean(name, option_names(at));
    return "unknown option '" + name + "' for " + where + (close ? "; did you mean " + *close + "?" : "") +
           see_help(where);
  }
  std::size_t positionals = 0;
  for (const CLI::Option* o : at->get_options())
    if (o->get_positional()) ++positionals;
  return "unexpected argument '" + first + "' for " + where +
         (positionals == 0 ? " (it takes no arguments; options start with --)" : "") + see_help(where);
}

}  // namespace

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const bool same =
          std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> did_you_mean(const std::string& typed, const std::vector<std::string>& names) {
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  for (const std::string& n : names) {
    const std::size_t d = edit_distance(typed, n);
    const std::size_t allowed = n.size() <= 4 ? 1 : std::min<std::size_t>(3, n.size() / 3);
    if (d <= allowed && (!best || d < best_distance)) {
      best = n;
      best_distance = d;
    }
  }
  if (best) return best;
  // A prefix long enough to mean something ("--lim", not "-").
  std::optional<std::string> only;
  const std::size_t letters = typed.size() - std::min(typed.find_first_not_of('-'), typed.size());
  if (letters < 2) return std::nullopt;
  for (const std::string& n : names)
    if (n.size() > typed.size() && n.compare(0, typed.size(), typed) == 0) {
      if (only && *only != n) return std::nullopt;
      only = n;
    }
  return only;
}

std::string usage_message(CLI::App& app, const CLI::ParseError& e, const std::vector<const char*>& argv) {
  CLI::App* at = deepest_command(app);
  const std::string where = command_path(at);
  std::string message = e.what();
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
    const std::vector<CLI::App*> subs = at->get_subcommands([](CLI::App*) { return true; });
    if (!subs.empty() && at->get_require_subcommand_min() > 0 &&
        std::none_of(subs.begin(), subs.end(), [](CLI::App* s) { return s->parsed(); }))
      return missing_command(app, at);
    // "id is required": say what it is.
    for (const CLI::Option* o : at->get_options())
      if (o->get_required() && o->count() == 0 && message.rfind(o->get_name(), 0) == 0 &&
          !o->get_description().empty()) {
        message += ": " + o->get_description();
        break;
      }
    return where + ": " + message + see_help(where);
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) return unexpected_argument(app, at, argv);
  std::smatch m;
  static const std::regex typed_missing(R"(^(\S+): \d+ required (\S+) missing$)");
  static const std::regex not_converted(R"(^Could not convert: (\S+) = (.*)$)");
  if (std::regex_match(message, m, typed_missing)) {
    message = m[1].str() + " needs a value (" + expected_for(m[2].str()) + ")";
  } else if (std::regex_match(message, m, not_converted)) {
    const CLI::Option* o = find_option(at, m[1].str());
    const std::string shown = o != nullptr && o->get_positional() ? o->get_name(true, true) : m[1].str();
    message =
        shown + ": expected " + expected_for(o != nullptr ? o->get_type_name() : "") + ", got '" + m[2].str() + "'";
  }
  if (message.find("--help") == std::string::npos) message += see_help(where);
  return message;
}

}  // namespace xsp::cli
