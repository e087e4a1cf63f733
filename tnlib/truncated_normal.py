class TruncatedNormal: pass
