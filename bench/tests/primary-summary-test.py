#!/usr/bin/env python3
"""Checks bench/primary_summary.py (the figures of bench/primary-bench.sh) on
hand-made fio reports and store figures, computed by hand below."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import primary_summary as ps  # noqa: E402

MiB = 1 << 20


def side(iops=0.0, p50=0, p99=0, io_bytes=0, bw=0):
    return {"iops": iops, "io_bytes": io_bytes, "bw_bytes": bw,
            "clat_ns": {"percentile": {"50.000000": p50, "99.000000": p99}}}


def write_reports(out, target, lat, written, stored, read_bw, mixed_iops, logical=None, stored_after_gc=None):
    jobs = {
        "fill": {"write": side(io_bytes=written[0]), "read": side()},
        "read": {"read": side(bw=read_bw), "write": side()},
        "latency": {"write": side(iops=lat[2], p50=lat[0], p99=lat[1]), "read": side()},
        "mixed": {"read": side(iops=mixed_iops[0], p99=900000), "write": side(iops=mixed_iops[1], p99=1200000)},
    }
    for name, job in jobs.items():
        with open(os.path.join(out, "primary-%s-%s.json" % (target, name)), "w") as f:
            json.dump({"jobs": [job]}, f)
    with open(os.path.join(out, "primary-%s-trace.json" % target), "w") as f:
        json.dump({"write_bytes": written[1], "write_p50_us": lat[0] / 2000.0, "write_p99_us": lat[1] / 1000.0 * 1.5,
                   "read_p99_us": 10.0, "iops": 1000.0}, f)
    if target == "rdwr":
        stats = {"stored_bytes": stored}
    else:
        stats = {"dedup": {"stored_bytes": stored, "logical_bytes": logical or sum(written), "stored_again_bytes": 7,
                           "selective_requests_full_dedup": 3, "selective_full_dedup_bytes": 12288}}
    with open(os.path.join(out, "primary-%s-stats.json" % target), "w") as f:
        json.dump(stats, f)
    if target != "rdwr":
        gc = {"dedup": dict(stats["dedup"], background_blocks_remapped=5),
              "gc": {"used_bytes": stored_after_gc or stored}}
        with open(os.path.join(out, "primary-%s-stats-gc.json" % target), "w") as f:
            json.dump(gc, f)


class Summary(unittest.TestCase):
    def test_ratios_side_by_side(self):
        with tempfile.TemporaryDirectory() as out:
            # Every target writes 100 MiB + 300 MiB; inline stores 100 MiB (saves 300),
            # selective 250 MiB (saves 150: half of inline's savings), off 380, rdwr 100.
            write_reports(out, "inline", (200000, 1000000, 4000), (100 * MiB, 300 * MiB), 100 * MiB, 100e6, (700, 300),
                          stored_after_gc=80 * MiB)
            write_reports(out, "selective", (150000, 600000, 5000), (100 * MiB, 300 * MiB), 250 * MiB, 250e6, (900, 400))
            write_reports(out, "off", (120000, 550000, 5500), (100 * MiB, 300 * MiB), 380 * MiB, 200e6, (900, 400))
            # Out-of-band stores 400 MiB before its pass (saves nothing), 130 after it
            # and GC; inline after GC 80. Of the 400 MiB the LUN holds, inline saves
            # 320, out-of-band 270: 270/320 of inline's.
            write_reports(out, "out-of-band", (110000, 520000, 5800), (100 * MiB, 300 * MiB), 400 * MiB, 200e6,
                          (900, 400), stored_after_gc=130 * MiB)
            write_reports(out, "rdwr", (100000, 500000, 6000), (100 * MiB, 300 * MiB), 100 * MiB, 300e6, (2000, 900))
            sys.argv = ["primary_summary.py", out, str(400 * MiB), str(100 * MiB), "20", "30"]
            buf = io.StringIO()
            with redirect_stdout(buf):
                ps.main()
            j = json.loads(buf.getvalue())
        t, r = j["targets"], j["ratios"]
        self.assertAlmostEqual(t["inline"]["write_p50_us"], 200.0)
        self.assertAlmostEqual(t["inline"]["write_p99_us"], 1000.0)
        self.assertAlmostEqual(t["selective"]["mixed_iops"], 1300.0)
        self.assertAlmostEqual(t["selective"]["mixed_write_p99_us"], 1200.0)
        self.assertAlmostEqual(t["inline"]["saved_share"], 0.75)
        self.assertNotIn("saved_share", t["rdwr"])  # in place: no dedup share
        self.assertEqual(t["selective"]["selective"]["requests_full_dedup"], 3)
        self.assertAlmostEqual(r["selective_p99_vs_rdwr"], 1.2)
        self.assertAlmostEqual(t["inline"]["trace_write_p99_us"], 1500.0)
        self.assertAlmostEqual(r["selective_trace_p99_vs_rdwr"], 1.2)
        self.assertAlmostEqual(r["inline_p99_vs_rdwr"], 2.0)
        self.assertAlmostEqual(r["off_p99_vs_rdwr"], 1.1)
        self.assertAlmostEqual(r["selective_p50_vs_rdwr"], 1.5)
        self.assertAlmostEqual(r["selective_savings_of_inline"], 0.5)
        self.assertAlmostEqual(r["selective_read_vs_inline"], 2.5)
        self.assertAlmostEqual(r["out_of_band_p99_vs_rdwr"], 1.04)
        self.assertAlmostEqual(r["out_of_band_p50_vs_rdwr"], 1.1)
        self.assertAlmostEqual(r["out_of_band_savings_of_inline_after_pass"], 270 / 320)
        self.assertAlmostEqual(r["out_of_band_savings_of_inline_before_pass"], 0.0)
        self.assertAlmostEqual(t["out-of-band"]["saved_share"], 0.0)
        self.assertAlmostEqual(t["out-of-band"]["saved_share_after_gc"], 270 / 400)
        self.assertAlmostEqual(t["selective"]["saved_share_after_gc"], 150 / 400)
        self.assertEqual(t["out-of-band"]["background"]["blocks_remapped"], 5)
        self.assertEqual(j["rounds"], 20)


if __name__ == "__main__":
    unittest.main()
