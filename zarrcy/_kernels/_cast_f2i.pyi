# _cast_f2i has no Python-level API: its block loops are cimported by _cast_fast and
# _cast_scale_offset (see _cast_f2i.pxd).
