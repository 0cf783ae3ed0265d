-- no_mechanism.lua — a policy table without a mechanism.
return {
  name = "no_mechanism",
  doc = "forgot the mechanism",
  params = {},
}
