// Random 128-bit identities: of a data directory (the instance id in
// DATA-DIR/instance-id, which the monitor reports so dedupv1_mon and dedupv1d
// can tell which instance answers on a port) and of a volume (its uid in the
// volume table, the SCSI serial and device id of its LUN). An id is made once
// from the kernel's random source and never changes; all zero means "none".
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "core/base/env.h"
#include "core/base/status.h"

namespace dedupv1 {

using Id128 = std::array<uint8_t, 16>;

// 16 bytes from the kernel's random source (never all zero).
Id128 NewRandomId128();
bool IsZero(const Id128& id);
// 32 lower-case hex digits.
std::string Id128ToHex(const Id128& id);
// Parses exactly 32 hex digits (either case); false for anything else.
bool ParseId128Hex(const std::string& text, Id128* id);

// DATA-DIR/instance-id: one line of 32 hex digits.
extern const char kInstanceIdFile[];
// NotFound when the file does not exist (a directory the engine never
// opened); Corruption naming the file when it does not hold an id.
Status ReadInstanceId(Env* env, const std::string& data_dir, Id128* id);
// Reads the id, making and writing (atomically) a new one when the file does
// not exist. Called by the engine at open, with the data directory locked.
Status LoadOrCreateInstanceId(Env* env, const std::string& data_dir, Id128* id);

}  // namespace dedupv1
