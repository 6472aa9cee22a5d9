# The data of the store fixtures (sourced by make-store-fixture.sh, which
# writes it through a release, and store-fixture-test.sh, which reads it back
# through this tree): made again from fixed keys, so a fixture holds only
# the store, never a second copy of what it stores.

# The config lines of the fixture's store (beside dd_write_config's own).
FIXTURE_CONFIG=("volume = backup1 16M" "volume = backup2 8M")

# fixture_stream KEY BYTES: BYTES of AES-128-CTR keystream under KEY (32 hex
# digits): the same bytes on every machine, and not compressible.
fixture_stream() {
  openssl enc -aes-128-ctr -nosalt -K "$1" -iv 00000000000000000000000000000000 </dev/zero 2>/dev/null |
    head -c "$2"
}

# fixture_generate DIR: DIR/a.img (generation 1 of LUN 1, 1.5 MiB),
# DIR/b.img (LUN 2, 512 KiB), DIR/a2.img (generation 2 of LUN 1: b.img
# twice, so it deduplicates against LUN 2 and overwrites the first MiB of
# generation 1) and DIR/lun1.img (what LUN 1 then holds: a2.img, then the
# rest of generation 1).
fixture_generate() {
  fixture_stream 000102030405060708090a0b0c0d0e0f $((3 << 19)) >"$1/a.img"
  fixture_stream 101112131415161718191a1b1c1d1e1f $((1 << 19)) >"$1/b.img"
  cat "$1/b.img" "$1/b.img" >"$1/a2.img"
  { cat "$1/a2.img"; tail -c +$(((1 << 20) + 1)) "$1/a.img"; } >"$1/lun1.img"
}
