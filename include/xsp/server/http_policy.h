// Who may talk to `xsp serve` (docs/server.md "Security"): the checks on the Host, Origin, Sec-Fetch-Site and
// Content-Type headers that keep web pages in a browser on the machine from writing (cross-site request forgery)
// or reading through a name that resolves to the server (DNS rebinding). Pure functions of the headers, so that
// they are unit-tested and fuzzed without a socket.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xsp::detail {

/// Why a request is refused: the HTTP status, the message and the header at fault.
struct Refusal {
  int status;
  std::string message;
  std::string field;
};

/// The names under which the server may be reached, besides IP literals (an IP literal in Host is never a
/// rebinding: a page can only reach it under that literal, which is then its own origin). Lower case, without a
/// trailing dot.
struct HostNames {
  std::vector<std::string> names;
};

/// "localhost", this machine's host name (gethostname), `bound_host` when it is a name rather than an address, and
/// every name of `extra` (the `--allowed-host` option: the public name of a TLS proxy in front of the server).
/// Names are lower-cased; empty ones are dropped.
HostNames server_host_names(const std::string& bound_host, const std::vector<std::string>& extra);

/// The host part of a Host header value ("name", "name:8080", "127.0.0.1:8080", "[::1]:8080"), lower-cased and
/// without a trailing dot, or std::nullopt when the value is not a valid host[:port] (empty, bad port, unbalanced
/// brackets, characters no host name has).
std::optional<std::string> host_of(std::string_view host_header);

/// True for an IPv4 literal ("127.0.0.1") or a bracketed IPv6 literal ("[::1]").
bool is_ip_literal(std::string_view host);

/// The DNS-rebinding check, for every request: the Host header must be present (RFC 9112 §3.2) and name an IP
/// literal or one of `names`. Refuses with 400 (missing or malformed) or 421 Misdirected Request (another name),
/// field "Host".
std::optional<Refusal> check_host(const std::optional<std::string>& host_header, const HostNames& names);

/// The cross-site-write check, for requests that change state (POST, PUT, PATCH, DELETE):
///  - a request with a body method (POST, PUT, PATCH) must say `Content-Type: application/json` (parameters such as
///    charset allowed): 415 otherwise, field "Content-Type". An HTML form or a fetch() without a CORS preflight can
///    only send text/plain, form-urlencoded or multipart bodies, so a browser cannot forge one from another site.
///  - `Origin`, when sent (browsers send it on every such request), must be the server's own origin: the same host
///    and port as the Host header (http or https): 403 otherwise, field "Origin" ("null" included).
///  - `Sec-Fetch-Site`, when sent, must be "same-origin" or "none" (typed by the user): 403 otherwise.
std::optional<Refusal> check_write(std::string_view method, const std::optional<std::string>& content_type,
                                   const std::optional<std::string>& origin,
                                   const std::optional<std::string>& sec_fetch_site,
                                   const std::optional<std::string>& host_header);

}  // namespace xsp::detail
