// Watches one LUN's capacity change from a session that stays logged in, as
// an initiator sees a volume grown online (dedupv1d volume grow): the first
// command after the change gets CHECK CONDITION, UNIT ATTENTION, CAPACITY DATA
// HAS CHANGED (ASC 2Ah, ASCQ 09h), and READ CAPACITY (16) then reports the new
// size.
//
//   capacity_watch iscsi://127.0.0.1:PORT/IQN/LUN READY_FILE GO_FILE NEW_BYTES
//
// Logs in, clears the unit attentions of the new session, reads the capacity,
// creates READY_FILE, waits (at most 120 s) for GO_FILE, then checks. Prints
// "ok"/"FAIL" lines; exits 0 only if every check passed.
#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

int failed = 0;

void Check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) failed++;
}

bool Exists(const char* path) { return ::access(path, F_OK) == 0; }

// READ CAPACITY (16): the LUN's size in bytes, 0 on failure.
uint64_t Capacity(iscsi_context* iscsi, int lun) {
  scsi_task* task = iscsi_readcapacity16_sync(iscsi, lun);
  uint64_t bytes = 0;
  if (task != nullptr && task->status == SCSI_STATUS_GOOD) {
    auto* rc16 = static_cast<scsi_readcapacity16*>(scsi_datain_unmarshall(task));
    if (rc16 != nullptr) bytes = (rc16->returned_lba + 1) * rc16->block_length;
  }
  if (task != nullptr) scsi_free_scsi_task(task);
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s iscsi://HOST:PORT/IQN/LUN READY_FILE GO_FILE NEW_BYTES\n", argv[0]);
    return 2;
  }
  const uint64_t want = std::strtoull(argv[4], nullptr, 10);
  iscsi_context* iscsi = iscsi_create_context("iqn.2026-11.dedupv1:capacity-watch");
  iscsi_url* url = iscsi == nullptr ? nullptr : iscsi_parse_full_url(iscsi, argv[1]);
  if (url == nullptr) {
    std::fprintf(stderr, "bad url %s\n", argv[1]);
    return 2;
  }
  iscsi_set_targetname(iscsi, url->target);
  iscsi_set_session_type(iscsi, ISCSI_SESSION_NORMAL);
  const int lun = url->lun;
  if (iscsi_full_connect_sync(iscsi, url->portal, lun) != 0) {
    std::printf("FAIL login: %s\n", iscsi_get_error(iscsi));
    return 1;
  }
  // A new session starts with unit attentions of its own (power on, reset).
  for (int i = 0; i < 10; i++) {
    scsi_task* tur = iscsi_testunitready_sync(iscsi, lun);
    const bool good = tur != nullptr && tur->status == SCSI_STATUS_GOOD;
    if (tur != nullptr) scsi_free_scsi_task(tur);
    if (good) break;
  }
  const uint64_t before = Capacity(iscsi, lun);
  Check(before > 0, "capacity before: " + std::to_string(before) + " bytes");
  std::ofstream(argv[2]) << before << "\n";
  for (int i = 0; i < 1200 && !Exists(argv[3]); i++) ::usleep(100 * 1000);
  Check(Exists(argv[3]), "the change was made within 120 s");

  scsi_task* tur = iscsi_testunitready_sync(iscsi, lun);
  const bool ua = tur != nullptr && tur->status == SCSI_STATUS_CHECK_CONDITION &&
                  tur->sense.key == SCSI_SENSE_UNIT_ATTENTION && tur->sense.ascq == 0x2a09;
  Check(ua, std::string("the session's next command gets UNIT ATTENTION, CAPACITY DATA HAS CHANGED") +
                (tur != nullptr && !ua ? " (got status " + std::to_string(tur->status) + ", sense key " +
                                             std::to_string(tur->sense.key) + ", ascq " +
                                             std::to_string(tur->sense.ascq) + ")"
                                       : ""));
  if (tur != nullptr) scsi_free_scsi_task(tur);
  const uint64_t after = Capacity(iscsi, lun);
  Check(after == want, "capacity after: " + std::to_string(after) + " bytes (want " + std::to_string(want) + ")");
  iscsi_logout_sync(iscsi);
  iscsi_destroy_context(iscsi);
  return failed == 0 ? 0 : 1;
}
