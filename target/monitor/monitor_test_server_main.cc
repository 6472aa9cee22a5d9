// monitor_test_server: opens a small DedupSystem in a data directory, writes
// some duplicate data, and serves it with a MonitorServer until SIGTERM or
// SIGINT. Used by tests/dedupv1_mon_test.sh and for looking at the status
// page by hand:
//
//   monitor_test_server --data-dir DIR [--port P] [--token T]
//                       [--port-file FILE] [--write-mib N] [--traffic]
//
// --port 0 (the default) picks a free port; the port is printed on stdout and
// written to FILE (atomically) when given. --traffic keeps a writer busy on
// vol1 so the throughput chart moves.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "target/monitor/monitor_test_util.h"

using namespace dedupv1;

int main(int argc, char** argv) {
  std::string data_dir, token, port_file;
  long port = 0, write_mib = 8;
  bool traffic = false;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "monitor_test_server: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--data-dir") data_dir = next();
    else if (a == "--port") port = std::strtol(next().c_str(), nullptr, 10);
    else if (a == "--token") token = next();
    else if (a == "--port-file") port_file = next();
    else if (a == "--write-mib") write_mib = std::strtol(next().c_str(), nullptr, 10);
    else if (a == "--traffic") traffic = true;
    else {
      std::fprintf(stderr, "monitor_test_server: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (data_dir.empty() || port < 0 || port > 65535 || write_mib < 0 || write_mib > 64) {
    std::fprintf(stderr, "usage: monitor_test_server --data-dir DIR [--port P] [--token T] "
                         "[--port-file FILE] [--write-mib 0..64] [--traffic]\n");
    return 2;
  }

  // Block the stop signals before any thread starts, so sigwait gets them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::Open(test::SmallMonitorOptions(data_dir), Env::Default(), &sys);
  if (!s.ok()) {
    std::fprintf(stderr, "monitor_test_server: %s\n", s.ToString().c_str());
    return 1;
  }
  Volume* vol = nullptr;
  sys->GetVolume("vol1", &vol);
  for (long i = 0; i < write_mib && s.ok(); i++) {
    s = vol->Write(static_cast<uint64_t>(i) << 20, 1 << 20, test::PatternBlock(i).data(), false);
  }
  if (s.ok()) s = sys->Sync();
  MonitorOptions mo;
  mo.port = static_cast<uint16_t>(port);
  mo.token = token;
  std::unique_ptr<MonitorServer> server;
  if (s.ok()) s = MonitorServer::Start(sys.get(), mo, &server);
  if (!s.ok()) {
    std::fprintf(stderr, "monitor_test_server: %s\n", s.ToString().c_str());
    sys->Close();
    return 1;
  }
  std::printf("%u\n", server->port());
  std::fflush(stdout);
  if (!port_file.empty()) {
    s = WriteFileAtomically(Env::Default(), port_file, std::to_string(server->port()) + "\n");
    if (!s.ok()) std::fprintf(stderr, "monitor_test_server: %s\n", s.ToString().c_str());
  }
  std::unique_ptr<test::PatternWriter> writer;
  if (traffic) writer = std::make_unique<test::PatternWriter>(vol, 32 << 20, 256 << 10, 5, false);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  if (writer) writer->Stop();
  server->Stop();
  s = sys->Close();
  if (!s.ok()) {
    std::fprintf(stderr, "monitor_test_server: close: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
