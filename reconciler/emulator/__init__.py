"""A local, independent implementation of the platform API (docs/guides/emulator.md).

It imports nothing from the rest of reconciler: it is a second reading of the spec, so the
reconciler's own client is tested against something it did not write.
"""
