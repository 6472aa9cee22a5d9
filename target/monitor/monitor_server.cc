#include "target/monitor/monitor_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace dedupv1 {

namespace {

// Marks a connection whose request headers have been seen (first call of the
// access handler); later calls carry the body or finish the request.
char kRequestStarted;

MHD_Result CollectParam(void* cls, MHD_ValueKind, const char* key, const char* value) {
  auto* params = static_cast<std::map<std::string, std::string>*>(cls);
  if (key != nullptr) (*params)[key] = value != nullptr ? value : "";
  return MHD_YES;
}

MHD_Result Dispatch(void* cls, MHD_Connection* connection, const char* url, const char* method,
                    const char* /*version*/, const char* /*upload_data*/,
                    size_t* upload_data_size, void** con_cls) {
  if (*con_cls == nullptr) {
    *con_cls = &kRequestStarted;
    return MHD_YES;
  }
  if (*upload_data_size != 0) {
    *upload_data_size = 0;  // no endpoint reads a body; parameters go in the query
    return MHD_YES;
  }
  auto* server = static_cast<MonitorServer*>(cls);
  // The whole request is here: no longer idle, so never evicted while it is handled.
  server->guard().Busy(connection);
  MonitorRequest request;
  request.method = method;
  request.path = url;
  MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &CollectParam, &request.params);
  if (const char* auth =
          MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION)) {
    request.authorization = auth;
  }
  MonitorResponse answer = server->handler().Handle(request);
  MHD_Response* response = MHD_create_response_from_buffer(
      answer.body.size(), answer.body.data(), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, answer.content_type.c_str());
  MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  // The page loads nothing from other hosts; say so to the browser too.
  MHD_add_response_header(response, "Content-Security-Policy",
                          "default-src 'self'; script-src 'self' 'unsafe-inline'; "
                          "style-src 'self' 'unsafe-inline'; img-src 'self' data:");
  MHD_add_response_header(response, "X-Content-Type-Options", "nosniff");
  if (!answer.allow.empty()) MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, answer.allow.c_str());
  MHD_Result ret = MHD_queue_response(connection, static_cast<unsigned>(answer.status), response);
  MHD_destroy_response(response);
  return ret;
}

void NotifyConnection(void* cls, MHD_Connection* connection, void** /*socket_context*/,
                      MHD_ConnectionNotificationCode code) {
  ConnectionGuard& guard = static_cast<MonitorServer*>(cls)->guard();
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const MHD_ConnectionInfo* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    guard.Opened(connection, info != nullptr ? info->connect_fd : -1);
  } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    guard.Closed(connection);  // libmicrohttpd closes the socket after this
  }
}

void RequestCompleted(void* cls, MHD_Connection* connection, void** /*con_cls*/,
                      MHD_RequestTerminationCode /*code*/) {
  static_cast<MonitorServer*>(cls)->guard().Idle(connection);
}

bool IsLoopback(const sockaddr* addr) {
  if (addr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) return in6->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

std::string HostPort(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

// Resolves |host| and opens a listening socket on it; *fd and *bound_port on success.
Status Listen(const MonitorOptions& options, int* fd, uint16_t* bound_port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(options.port);
  const int rc = getaddrinfo(options.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) {
    return Status::InvalidArgument("monitor.host " + options.host + " does not resolve: " +
                                   gai_strerror(rc));
  }
  const std::string where = HostPort(options.host, options.port);
  Status result = Status::IOError("monitor: no usable address for " + where);
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    if (!IsLoopback(ai->ai_addr) && options.token.empty()) {
      result = Status::InvalidArgument(
          "monitor.host " + options.host +
          " is not a loopback address: set monitor.token to protect the control endpoints");
      break;
    }
    int s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (s < 0) {
      result = Status::FromErrno(errno, "monitor: socket for " + where);
      continue;
    }
    const int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(s, ai->ai_addr, ai->ai_addrlen) != 0 || listen(s, 64) != 0) {
      result = Status::FromErrno(errno, "monitor: cannot listen on " + where);
      close(s);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    getsockname(s, reinterpret_cast<sockaddr*>(&bound), &len);
    *bound_port = bound.ss_family == AF_INET6
                      ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                      : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    *fd = s;
    result = Status::OK();
    break;
  }
  freeaddrinfo(res);
  return result;
}

ThroughputCounters ReadCounters(DedupSystem* system) {
  const SystemStats& st = system->stats();
  ThroughputCounters c;
  c.bytes_written = st.bytes_written.load(std::memory_order_relaxed);
  c.bytes_read = st.bytes_read.load(std::memory_order_relaxed);
  c.write_ops = st.write_ops.load(std::memory_order_relaxed);
  c.read_ops = st.read_ops.load(std::memory_order_relaxed);
  c.bytes_chunked = st.bytes_chunked.load(std::memory_order_relaxed);
  return c;
}

std::chrono::steady_clock::time_point StartTime(const MonitorOptions& o) {
  return o.system_start == std::chrono::steady_clock::time_point{} ? std::chrono::steady_clock::now()
                                                                    : o.system_start;
}

}  // namespace

MonitorServer::MonitorServer(DedupSystem* system, const MonitorOptions& options)
    : options_(options),
      sampler_([system] { return ReadCounters(system); }, &history_, options.sample_interval),
      collector_(system, &history_, StartTime(options), options.effective_config),
      handler_(system, &collector_, options.token),
      guard_(options.max_idle_connections) {}

Status MonitorServer::Start(DedupSystem* system, const MonitorOptions& options,
                            std::unique_ptr<MonitorServer>* out) {
  int fd = -1;
  uint16_t port = 0;
  DEDUPV1_RETURN_IF_ERROR(Listen(options, &fd, &port));
  std::unique_ptr<MonitorServer> server(new MonitorServer(system, options));
  server->port_ = port;
  server->sampler_.Start();
  const unsigned flags =
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL;
  MonitorServer* self = server.get();
  server->daemon_ = MHD_start_daemon(
      flags, 0, nullptr, nullptr, &Dispatch, self, MHD_OPTION_LISTEN_SOCKET, fd,
      MHD_OPTION_CONNECTION_LIMIT, std::max(1u, options.max_connections),
      MHD_OPTION_CONNECTION_TIMEOUT, std::max(1u, options.connection_timeout_s),
      MHD_OPTION_NOTIFY_CONNECTION, &NotifyConnection, self,
      MHD_OPTION_NOTIFY_COMPLETED, &RequestCompleted, self, MHD_OPTION_END);
  if (server->daemon_ == nullptr) {
    close(fd);
    server->sampler_.Stop();
    return Status::IOError("monitor: libmicrohttpd could not start on " +
                           HostPort(options.host, port));
  }
  *out = std::move(server);
  return Status::OK();
}

MonitorServer::~MonitorServer() { Stop(); }

void MonitorServer::Stop() {
  if (daemon_ != nullptr) {
    MHD_stop_daemon(daemon_);  // closes the listening socket, joins the connection threads
    daemon_ = nullptr;
  }
  sampler_.Stop();
}

std::string MonitorServer::url() const { return "http://" + HostPort(options_.host, port_) + "/"; }

}  // namespace dedupv1
