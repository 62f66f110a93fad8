// Usage errors in xsp's words: CLI11's parse errors rewritten as one line that names the command, the option or
// value and what was expected, with a "did you mean" for a mistyped command or option.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace xsp::cli {

/// Levenshtein distance between `a` and `b` (insertions, deletions, substitutions; bytes), case-insensitive.
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The one of `names` closest to `typed` when it is close enough to be a typo: at most 1 edit for names up to 4
/// characters, else at most a third of the name's length (and never more than 3), or `typed` is a prefix of exactly
/// one name ("--lim" -> "--limit"). std::nullopt when nothing is that close; ties go to the first in `names`.
std::optional<std::string> did_you_mean(const std::string& typed, const std::vector<std::string>& names);

/// The message run_cli() prints after "xsp: error: " for parse error `e` of `app` (argv: the arguments parsed, the
/// program name first): an unknown command or option with the closest known one, an unexpected argument, a missing
/// argument or command, a value that does not convert, each ending "(see `xsp CMD --help`)".
std::string usage_message(CLI::App& app, const CLI::ParseError& e, const std::vector<const char*>& argv);

}  // namespace xsp::cli
