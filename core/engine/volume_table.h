// The volume table of a data directory: DATA-DIR/volumes, a header line, one
// "id name size uid" line per volume ever created, and a checksum line. Ids key the block index and
// are never reused; a volume no longer in the config keeps its line (and its
// data). The uid is the volume's random 128-bit identity (the SCSI serial and
// device id of its LUN), made with its line and never changed; a line written
// by an older build ("id name size") gets one when the engine next opens the
// directory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/env.h"
#include "core/base/identity.h"
#include "core/engine/options.h"
#include "core/base/status.h"

namespace dedupv1 {

struct VolumeRecord {
  uint32_t id = 0;
  std::string name;
  uint64_t size = 0;  // bytes
  Id128 uid{};        // all zero: a line of an older build, none yet
};

// Reads the table at |path| in file order. A missing file is NotFound: it is
// written when the store is created, and recreating it from the config could
// give volumes each other's ids (core/engine/data_dir.h). A malformed line is
// Corruption naming the file and line; an id or name given twice, or id 0,
// is Corruption naming the file and both entries.
// The file starts with a header line and ends with a checksum line
// (core/base/crc_text.h), so a flipped byte is Corruption instead of another valid
// table; a file of an older build has neither and is read as it is, with
// |*needs_rewrite| (if given) set so the caller writes it anew.
Status ReadVolumeTable(Env* env, const std::string& path, std::vector<VolumeRecord>* records,
                       bool* needs_rewrite = nullptr);
// Replaces the table at |path| atomically.
Status WriteVolumeTable(Env* env, const std::string& path, const std::vector<VolumeRecord>& records);

// Brings |records| in line with the |configured| volumes, as the engine does
// at every open: each configured volume without a record gets one (the next
// ids, in config order, and a new uid), a volume configured larger than
// recorded grows, and a record without a uid gets one. Refuses a volume
// configured smaller than recorded (InvalidArgument: shrinking would lose
// data). |*changed| tells whether the table must be written back. dedupv1d
// runs it on a copy to know the ids (its LUN numbers) before tgtd opens the
// engine.
Status ApplyConfiguredVolumes(const std::vector<VolumeOptions>& configured, std::vector<VolumeRecord>* records,
                              bool* changed);

}  // namespace dedupv1
