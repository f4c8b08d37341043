# Which Nix systems a model is offered on: the platforms its pdm.lock was locked for
# ([[metadata.targets]] platform = "manylinux_2_28_x86_64" -> x86_64-linux). A lock without
# targets (older PDM) gives every system the flake supports. Builtins only.
#   import ./systems.nix { root = ../.; supported = [ "x86_64-linux" "aarch64-linux" ]; } "elemnet"
{ root, supported }:
name:
let
  lockFile = root + "/models/${name}/pdm.lock";
  lock = if builtins.pathExists lockFile then builtins.fromTOML (builtins.readFile lockFile) else { };
  targets = lock.metadata.targets or [ ];
  systemOf = t:
    let m = builtins.match "(manylinux|musllinux)_[0-9]+_[0-9]+_(x86_64|aarch64)" (t.platform or ""); in
    if m == null then null else "${builtins.elemAt m 1}-linux";
  locked = builtins.filter (s: s != null) (map systemOf targets);
in
if targets == [ ] then supported else builtins.filter (s: builtins.elem s locked) supported
