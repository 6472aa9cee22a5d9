#include "target/target_options.h"

#include <arpa/inet.h>

#include <cctype>
#include <sstream>

namespace dedupv1 {
namespace {

// An iSCSI name (RFC 3720 3.2.6): iqn.YYYY-MM.reversed.domain[:anything],
// eui.<16 hex> or naa.<16 or 32 hex>. Lower case only: names are compared
// after normalisation to lower case, and tgt compares them byte for byte.
Status CheckIscsiName(const std::string& key, const std::string& v) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(key + " '" + v + "' is not an iSCSI name: " + why +
                                   " (e.g. iqn.2026-11.org.example:storage)");
  };
  if (v.size() > 223) return bad("longer than 223 bytes");
  auto is_hex = [](const std::string& s) {
    for (char c : s) if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
    return true;
  };
  if (v.rfind("eui.", 0) == 0) {
    return v.size() == 20 && is_hex(v.substr(4)) ? Status::OK() : bad("eui. takes 16 hex digits");
  }
  if (v.rfind("naa.", 0) == 0) {
    const std::string h = v.substr(4);
    return (h.size() == 16 || h.size() == 32) && is_hex(h) ? Status::OK() : bad("naa. takes 16 or 32 hex digits");
  }
  if (v.rfind("iqn.", 0) != 0) return bad("it must start with iqn., eui. or naa.");
  auto digits = [&](size_t at, size_t n) {
    if (v.size() < at + n) return false;
    for (size_t i = at; i < at + n; i++) if (!std::isdigit(static_cast<unsigned char>(v[i]))) return false;
    return true;
  };
  if (!digits(4, 4) || v.size() < 9 || v[8] != '-' || !digits(9, 2) || v.size() < 12 || v[11] != '.') {
    return bad("a date YYYY-MM. must follow iqn.");
  }
  const int month = (v[9] - '0') * 10 + (v[10] - '0');
  if (month < 1 || month > 12) return bad("month must be 01..12");
  const size_t colon = v.find(':', 12);
  const std::string authority = v.substr(12, colon == std::string::npos ? std::string::npos : colon - 12);
  if (authority.empty() || authority.front() == '.' || authority.back() == '.' ||
      authority.find("..") != std::string::npos) {
    return bad("a reversed domain name must follow the date");
  }
  for (char c : v) {
    if (std::isupper(static_cast<unsigned char>(c))) return bad("upper case is not allowed");
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != ':') {
      return bad(std::string("character '") + c + "' is not allowed (letters, digits, '.', '-', ':')");
    }
  }
  return Status::OK();
}

bool IsIpv4(const std::string& s) {
  in_addr a;
  return inet_pton(AF_INET, s.c_str(), &a) == 1;
}
bool IsIpv6(const std::string& s) {
  in6_addr a;
  return inet_pton(AF_INET6, s.c_str(), &a) == 1;
}

// ADDR:PORT with a numeric IPv4 address or [IPv6]:PORT; tgtd's portal syntax.
Status CheckPortal(const std::string& key, const std::string& v) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(key + " '" + v + "': " + why +
                                   " (expected ADDR:PORT, e.g. 0.0.0.0:3260 or [::]:3260)");
  };
  const size_t colon = v.rfind(':');
  if (colon == std::string::npos) return bad("no port");
  std::string host = v.substr(0, colon);
  const std::string port = v.substr(colon + 1);
  uint64_t p = 0;
  if (port.empty() || !ParseUint(port, &p).ok() || p < 1 || p > 65535) return bad("port must be 1..65535");
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    if (!IsIpv6(host.substr(1, host.size() - 2))) return bad("not an IPv6 address in [ ]");
    return Status::OK();
  }
  if (!IsIpv4(host)) return bad("not a numeric IPv4 address (write IPv6 as [ADDR]:PORT)");
  return Status::OK();
}

// ALL, an IP address or a CIDR network (IPv6 optionally in [ ]): tgt's ACL syntax.
Status CheckInitiatorAddress(const std::string& v) {
  auto bad = [&]() {
    return Status::InvalidArgument("target.initiator-address '" + v +
                                   "' must be ALL, an IP address or a network (10.0.0.0/24, [fd00::]/64)");
  };
  if (v == "ALL") return Status::OK();
  std::string addr = v, prefix;
  const size_t slash = v.find('/');
  if (slash != std::string::npos) {
    addr = v.substr(0, slash);
    prefix = v.substr(slash + 1);
  }
  if (addr.size() >= 2 && addr.front() == '[' && addr.back() == ']') addr = addr.substr(1, addr.size() - 2);
  const bool v4 = IsIpv4(addr), v6 = IsIpv6(addr);
  if (!v4 && !v6) return bad();
  if (slash != std::string::npos) {
    uint64_t n = 0;
    if (prefix.empty() || !ParseUint(prefix, &n).ok() || n > (v4 ? 32u : 128u)) return bad();
  }
  return Status::OK();
}

}  // namespace

const ConfigKeyTable<TargetOptions>& TargetOptions::KeyTable() {
  static const ConfigKeyTable<TargetOptions> table = {
      {"target.iqn", [](const std::string& v, TargetOptions* o) {
         DEDUPV1_RETURN_IF_ERROR(CheckIscsiName("target.iqn", v));
         o->iqn = v;
         return Status::OK();
       }},
      {"target.portal", [](const std::string& v, TargetOptions* o) {
         DEDUPV1_RETURN_IF_ERROR(CheckPortal("target.portal", v));
         o->portal = v;
         return Status::OK();
       }},
      {"target.control-port", [](const std::string& v, TargetOptions* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseUint(v, &x));
         // tgtd keeps it in a short.
         if (x > 32767) return Status::InvalidArgument("target.control-port must be 0..32767, got " + v);
         o->control_port = static_cast<uint32_t>(x);
         return Status::OK();
       }},
      {"target.initiator-address", [](const std::string& v, TargetOptions* o) {
         auto list = SplitConfigList(v);  // empty: the default (ALL unless names are given)
         for (const auto& a : list) DEDUPV1_RETURN_IF_ERROR(CheckInitiatorAddress(a));
         o->initiator_addresses = list;
         return Status::OK();
       }},
      {"target.initiator-name", [](const std::string& v, TargetOptions* o) {
         auto list = SplitConfigList(v);  // empty: none
         for (const auto& n : list) DEDUPV1_RETURN_IF_ERROR(CheckIscsiName("target.initiator-name", n));
         o->initiator_names = list;
         return Status::OK();
       }},
      {"target.chap-user", [](const std::string& v, TargetOptions* o) {
         // tgtadm passes the account as "user=U,password=P": no ',' or blanks.
         // Empty: no CHAP.
         if (v.size() > 255 || v.find_first_of(", \t=") != std::string::npos) {
           return Status::InvalidArgument("target.chap-user must be up to 255 characters without ',', '=' or blanks");
         }
         o->chap_user = v;
         return Status::OK();
       }},
      {"target.chap-password", [](const std::string& v, TargetOptions* o) {
         if ((!v.empty() && v.size() < 12) || v.size() > 255 || v.find_first_of(", \t") != std::string::npos) {
           return Status::InvalidArgument(
               "target.chap-password must be 12..255 characters without ',' or blanks "
               "(RFC 3720 asks for at least 96 bits; many initiators refuse shorter secrets)");
         }
         o->chap_password = v;
         return Status::OK();
       }},
      {"target.discovery-auth", [](const std::string& v, TargetOptions* o) {
         return ParseBool(v, &o->discovery_auth);
       }},
  };
  return table;
}

Status TargetOptions::Finish() const {
  if (chap_user.empty() != chap_password.empty()) {
    return Status::InvalidArgument("target.chap-user and target.chap-password go together: set both or neither");
  }
  for (const auto& a : initiator_addresses) {
    if (a == "ALL" && !initiator_names.empty()) {
      return Status::InvalidArgument(
          "target.initiator-address ALL admits every initiator, so target.initiator-name would have no "
          "effect: remove one of them");
    }
  }
  return Status::OK();
}

std::string TargetOptions::ToString() const {
  std::ostringstream o;
  o << "target.iqn = " << iqn << "\n"
    << "target.portal = " << portal << "\n"
    << "target.control-port = " << control_port << "\n";
  o << "target.initiator-address = ";
  if (initiator_addresses.empty()) o << (initiator_names.empty() ? "ALL" : "");
  o << JoinConfigList(initiator_addresses) << "\n"
    << "target.initiator-name = " << JoinConfigList(initiator_names) << "\n"
    << "target.chap-user = " << chap_user << "\n"
    << "target.chap-password = " << (chap_password.empty() ? "" : "(set)") << "\n"
    << "target.discovery-auth = " << (discovery_auth ? "true" : "false") << "\n";
  return o.str();
}

}  // namespace dedupv1
