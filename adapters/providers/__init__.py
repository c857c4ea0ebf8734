"""Search providers, one module each: every module here declares `PROVIDER = ProviderSpec(...)` (search_base) and the
registry finds it; adding a provider is adding a module (and its fixture test)."""
