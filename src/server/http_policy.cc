// The Host / Origin / Content-Type checks of include/xsp/server/http_policy.h.
#include "xsp/server/http_policy.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>

#include "xsp/util/strings.h"

namespace xsp::detail {
namespace {

bool valid_port(std::string_view p) {
  if (p.empty() || p.size() > 5) return false;
  if (!std::all_of(p.begin(), p.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) return false;
  return std::stoi(std::string(p)) <= 65535;
}

// A registered name as RFC 3986 allows it in a Host header: letters, digits, '-', '.', '_' (seen in practice).
bool valid_name(std::string_view n) {
  return !n.empty() && n.size() <= 253 && std::all_of(n.begin(), n.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_';
  });
}

// host and port of "host[:port]" (port "" when absent); std::nullopt when malformed.
std::optional<std::pair<std::string, std::string>> split_host_port(std::string_view v) {
  v = util::trim(v, " \t");
  if (v.empty()) return std::nullopt;
  std::string_view host, port;
  if (v.front() == '[') {
    const auto close = v.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = v.substr(0, close + 1);
    const std::string_view rest = v.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port = rest.substr(1);
      if (!valid_port(port)) return std::nullopt;
    }
    in6_addr a6{};
    if (inet_pton(AF_INET6, std::string(host.substr(1, host.size() - 2)).c_str(), &a6) != 1) return std::nullopt;
    return std::make_pair(util::to_lower(host), std::string(port));
  }
  const auto colon = v.find(':');
  host = v.substr(0, colon);
  if (colon != std::string_view::npos) {
    port = v.substr(colon + 1);
    if (!valid_port(port)) return std::nullopt;
  }
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  if (!valid_name(host)) return std::nullopt;
  return std::make_pair(util::to_lower(host), std::string(port));
}

std::optional<std::string> media_type(const std::optional<std::string>& content_type) {
  if (!content_type) return std::nullopt;
  std::string_view v = *content_type;
  v = util::trim(v.substr(0, v.find(';')), " \t");
  return util::to_lower(v);
}

}  // namespace

HostNames server_host_names(const std::string& bound_host, const std::vector<std::string>& extra) {
  HostNames h;
  auto add = [&](std::string name) {
    name = util::to_lower(name);
    if (!name.empty() && name.back() == '.') name.pop_back();
    if (name.empty() || is_ip_literal(name) || std::find(h.names.begin(), h.names.end(), name) != h.names.end()) return;
    h.names.push_back(std::move(name));
  };
  add("localhost");
  char buf[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buf, sizeof buf - 1) == 0) add(buf);
  if (bound_host.find(':') == std::string::npos) add(bound_host);  // a name, or an IPv4 literal that add() skips
  for (const auto& e : extra) add(e);
  return h;
}

std::optional<std::string> host_of(std::string_view host_header) {
  const auto hp = split_host_port(host_header);
  if (!hp) return std::nullopt;
  return hp->first;
}

bool is_ip_literal(std::string_view host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    in6_addr a6{};
    return inet_pton(AF_INET6, std::string(host.substr(1, host.size() - 2)).c_str(), &a6) == 1;
  }
  in_addr a4{};
  return inet_pton(AF_INET, std::string(host).c_str(), &a4) == 1;
}

std::optional<Refusal> check_host(const std::optional<std::string>& host_header, const HostNames& names) {
  if (!host_header)
    return Refusal{400, "Host: the header is missing (HTTP/1.1 requires it); send the address you connect to", "Host"};
  const auto host = host_of(*host_header);
  if (!host) return Refusal{400, "Host: expected host[:port], got '" + *host_header + "'", "Host"};
  if (is_ip_literal(*host) || std::find(names.names.begin(), names.names.end(), *host) != names.names.end())
    return std::nullopt;
  std::string list;
  for (const auto& n : names.names) list += (list.empty() ? "" : ", ") + n;
  return Refusal{421,
                 "Host: this server does not answer to '" + *host +
                     "' (a name it was not given could be a DNS-rebinding page); it answers to IP addresses and " +
                     list + " (add names with `xsp serve --allowed-host NAME`)",
                 "Host"};
}

std::optional<Refusal> check_write(std::string_view method, const std::optional<std::string>& content_type,
                                   const std::optional<std::string>& origin,
                                   const std::optional<std::string>& sec_fetch_site,
                                   const std::optional<std::string>& host_header) {
  if (method == "POST" || method == "PUT" || method == "PATCH") {
    const auto type = media_type(content_type);
    if (type != "application/json")
      return Refusal{415,
                     "Content-Type: writes take application/json (even with an empty body), got " +
                         (content_type ? "'" + *content_type + "'" : std::string("none")),
                     "Content-Type"};
  }
  if (sec_fetch_site) {
    const std::string site = util::to_lower(util::trim(*sec_fetch_site, " \t"));
    if (site != "same-origin" && site != "none")
      return Refusal{403, "Sec-Fetch-Site: writes are accepted from this server's own pages only, got '" + site + "'",
                     "Sec-Fetch-Site"};
  }
  if (!origin) return std::nullopt;  // not a browser: curl, scripts, agents
  const std::string o = util::to_lower(util::trim(*origin, " \t"));
  const auto refuse = [&] {
    return Refusal{403, "Origin: writes are accepted from this server's own pages only, got '" + *origin + "'",
                   "Origin"};
  };
  std::string_view rest = o;
  std::string default_port;
  if (rest.substr(0, 7) == "http://") {
    rest.remove_prefix(7);
    default_port = "80";
  } else if (rest.substr(0, 8) == "https://") {  // behind a TLS proxy
    rest.remove_prefix(8);
    default_port = "443";
  } else {
    return refuse();  // "null" (sandboxed frames, file: pages) and other schemes
  }
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  const auto from = split_host_port(rest);
  const auto to = host_header ? split_host_port(*host_header) : std::nullopt;
  if (!from || !to) return refuse();
  const std::string from_port = from->second.empty() ? default_port : from->second;
  // The Host header of a request through a proxy may omit the default port while the browser's origin names it.
  const std::string to_port = to->second.empty() ? default_port : to->second;
  if (from->first != to->first || from_port != to_port) return refuse();
  return std::nullopt;
}

}  // namespace xsp::detail
