"""Provenance: who published exactly these bytes. OpenSSF Model Signing (OMS) signatures, made and checked
with the `model_signing` and `sigstore` libraries, and reported as findings like a scan."""
