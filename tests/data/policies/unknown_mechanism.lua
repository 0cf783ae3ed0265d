-- unknown_mechanism.lua — names a mechanism the engine does not have.
return {
  name = "unknown_mechanism",
  doc = "a mechanism that does not exist",
  mechanism = "buddy",
}
