// Semantic versions and npm-style constraints (include/xsp/manifest/semver.h).
#include "xsp/manifest/semver.h"

#include <cctype>
#include <stdexcept>
#include <vector>

#include "xsp/util/strings.h"

namespace xsp {
namespace {

// A version as written in a constraint: the number of components given matters for exact matches
// ("=1.13" means any 1.13.x) and for ^/~ ranges.
struct Parsed {
  SemVer v;
  int parts = 0;  // 1..3 numeric components written
};

bool read_number(const std::string& s, std::size_t& i, long& out) {
  if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  long v = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    const long digit = s[i] - '0';
    if (v > (kMaxVersionNumber - digit) / 10) return false;  // absurd component; refuse rather than overflow
    v = v * 10 + digit;
    ++i;
  }
  out = v;
  return true;
}

std::optional<Parsed> parse_parts(const std::string& text) {
  std::string s(util::trim(text));
  std::size_t i = 0;
  if (i < s.size() && (s[i] == 'v' || s[i] == 'V')) ++i;
  Parsed p;
  long* fields[3] = {&p.v.major, &p.v.minor, &p.v.patch};
  if (!read_number(s, i, *fields[0])) return std::nullopt;
  p.parts = 1;
  while (p.parts < 3 && i + 1 < s.size() && s[i] == '.' && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
    ++i;
    // A number too large is refused, not cut short: its remaining digits would otherwise become the prerelease.
    if (!read_number(s, i, *fields[p.parts])) return std::nullopt;
    ++p.parts;
  }
  // Whatever follows up to "+build" is the prerelease: "-rc.1" (semver) or "a0" (PEP 440 / Debian style).
  std::string rest = s.substr(i);
  if (auto plus = rest.find('+'); plus != std::string::npos) rest.resize(plus);
  if (!rest.empty() && rest[0] == '-') rest.erase(0, 1);
  p.v.prerelease = rest;
  return p;
}

// Comparisons use the numbers only: PyTorch and Debian tag releases "1.13.0a0", which must satisfy ">=1.13".
int compare_numbers(const SemVer& a, const SemVer& b) {
  if (a.major != b.major) return a.major < b.major ? -1 : 1;
  if (a.minor != b.minor) return a.minor < b.minor ? -1 : 1;
  if (a.patch != b.patch) return a.patch < b.patch ? -1 : 1;
  return 0;
}

struct Clause {
  std::string op;  // ">=", ">", "<=", "<", "=", "^", "~", "*"
  Parsed version;
};

std::vector<Clause> parse_constraint(const std::string& constraint) {
  // Split on commas and blanks; an operator written apart from its version (">= 1.13") is joined back.
  std::vector<std::string> tokens;
  std::string cur;
  for (char c : constraint) {
    if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) tokens.push_back(cur), cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) tokens.push_back(cur);
  std::vector<std::string> merged;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    bool op_only = t.find_first_not_of("<>=^~") == std::string::npos && t != "*";
    if (op_only && i + 1 < tokens.size()) {
      merged.push_back(t + tokens[i + 1]);
      ++i;
    } else {
      merged.push_back(t);
    }
  }
  if (merged.empty()) throw std::invalid_argument("empty version constraint '" + constraint + "'");

  std::vector<Clause> clauses;
  for (const std::string& t : merged) {
    Clause c;
    std::string rest;
    static const std::string kOps[] = {">=", "<=", "==", ">", "<", "=", "^", "~"};  // longest first
    for (const std::string& op : kOps) {
      if (t.rfind(op, 0) == 0) {
        c.op = op;
        rest = t.substr(op.size());
        break;
      }
    }
    if (t == "*") {
      c.op = std::string(1, '*');
      clauses.push_back(c);
      continue;
    }
    if (c.op.empty() || c.op == "==") {
      if (c.op.empty()) rest = t;
      c.op = std::string(1, '=');
    }
    // Stricter than parse_semver: a constraint is written by hand, so "1.x" or ">=1.13!" is a mistake to
    // report, not a version with a prerelease to guess at.
    auto p = parse_parts(rest);
    bool ok = p && !rest.empty() && rest[0] != ' ';
    if (ok) {
      std::string pre = p->v.prerelease;
      std::size_t digits_end = rest.find_first_not_of("vV0123456789.");
      std::string tail = digits_end == std::string::npos ? "" : rest.substr(digits_end);
      if (!tail.empty() && rest[digits_end - 1] == '.') ok = false;  // "1.x", "1."
      if (pre.find_first_not_of("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz.-") !=
          std::string::npos)
        ok = false;
      if (!rest.empty() && rest.back() == '.') ok = false;
    }
    if (!ok)
      throw std::invalid_argument("bad version constraint clause '" + t + "' in '" + constraint +
                                  "': expected one of >=X, >X, <=X, <X, =X, X, ^X, ~X, * with X like 1.13.1");
    c.version = *p;
    clauses.push_back(c);
  }
  return clauses;
}

bool holds(const Clause& c, const SemVer& v) {
  const SemVer& x = c.version.v;
  if (c.op == "*") return true;
  int cmp = compare_numbers(v, x);
  if (c.op == ">=") return cmp >= 0;
  if (c.op == ">") return cmp > 0;
  if (c.op == "<=") return cmp <= 0;
  if (c.op == "<") return cmp < 0;
  if (c.op == "=") {
    // Components not written are wildcards: "=1.13" accepts 1.13.2.
    if (v.major != x.major) return false;
    if (c.version.parts >= 2 && v.minor != x.minor) return false;
    if (c.version.parts >= 3 && v.patch != x.patch) return false;
    return true;
  }
  if (c.op == "^") return cmp >= 0 && v.major == x.major;
  if (c.op == "~") return cmp >= 0 && v.major == x.major && v.minor == x.minor;
  return false;
}

}  // namespace

std::optional<SemVer> parse_semver(const std::string& text) {
  auto p = parse_parts(text);
  if (!p) return std::nullopt;
  return p->v;
}

bool satisfies(const std::string& version, const std::string& constraint) {
  auto clauses = parse_constraint(constraint);
  auto v = parse_semver(version);
  if (!v) throw std::invalid_argument("bad version '" + version + "': expected a version like 1.13.1");
  for (const Clause& c : clauses)
    if (!holds(c, *v)) return false;
  return true;
}

void check_constraint(const std::string& constraint) { (void)parse_constraint(constraint); }

}  // namespace xsp
