# GPU wrapper for model binaries, in the spirit of nixGL and /run/opengl-driver.
#
# At run time the wrapper (pyrepro/data/gpu-wrapper.sh, the same algorithm as pyrepro/gpu.py)
# finds the host's NVIDIA user-space driver: /run/opengl-driver/lib first (NixOS,
# nix-system-graphics), then the dynamic loader cache, then the usual distribution paths,
# and nvidia-smi / /proc/driver/nvidia/version for the version. It exposes only the driver
# libraries (libcuda, libnvidia-ml, libnvidia-ptxjitcompiler and siblings) through a private
# directory prepended to LD_LIBRARY_PATH, prints one line saying what it found, and runs the
# program. With no driver it runs on CPU (gpu = "optional") or fails (gpu = "required").
#
# Usage (nix/model.nix):
#   import ./gpu.nix { inherit pkgs; } { name = "alignn"; program = "${unwrapped}/bin/alignn"; gpu = "optional"; }
#
# Only attributes of `pkgs` listed below are used, so tests can pass a busybox stand-in.
{ pkgs }:
{ name, program, gpu ? "optional" }:
let
  tools = pkgs.lib.makeBinPath [ pkgs.coreutils pkgs.gnugrep pkgs.gnused pkgs.gawk ];
in
assert builtins.elem gpu [ "none" "optional" "required" ];
pkgs.writeShellScriptBin name ''
  export PATH="${tools}''${PATH:+:$PATH}"
  export PYREPRO_GPU_NEED="${gpu}"
  exec ${pkgs.runtimeShell} ${../pyrepro/data/gpu-wrapper.sh} ${program} "$@"
''
