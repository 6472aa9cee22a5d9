// Small text files of a data directory (`system`, `volumes`,
// `containers/container-aliases`) end with the line "crc XXXXXXXX": the
// CRC-32C, 8 lower-case hex digits, of every byte before that line. A flipped
// byte anywhere in such a file then makes it fail to read (Corruption naming
// it) instead of being read as other content that still parses (issue 19: a
// flipped byte in a volume name gave the volume a new, empty id and its LUN
// read zeros).
#pragma once

#include <string>

#include "core/base/status.h"

namespace dedupv1 {

// |text| (which ends with a newline, or is empty) followed by its crc line.
std::string AppendCrcLine(std::string text);

// Splits |text|, read from |path|, into the |body| before its crc line. A
// text whose last line is not a crc line has none (a file written by an
// older build): its whole text is the body and |*had_crc| is false, or
// Corruption naming the file if |required|. A crc line that is malformed or
// does not match is Corruption naming the file.
Status StripCrcLine(const std::string& path, const std::string& text, bool required, std::string* body,
                    bool* had_crc);

}  // namespace dedupv1
