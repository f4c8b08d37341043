# Reviewed dream2nix overrides shared by every model package (imported by nix/model.nix).
#
# Overrides for packages a model's lock does not contain are never evaluated (dream2nix
# only instantiates locked packages), so one list serves all models.
#
# GPU: torch's and TensorFlow's default Linux wheels are CUDA builds that dlopen the host
# driver (libcuda.so.1). A pure closure cannot contain it, so
#   - autoAddDriverRunpath adds /run/opengl-driver/lib to their RUNPATH (NixOS), and
#   - autoPatchelf is told not to fail on the missing libcuda;
# on other distributions nix/gpu.nix's wrapper exposes the host driver at run time.
# The nvidia-*-cu11/cu12 runtime wheels are found by autoPatchelf through
# addAutoPatchelfSearchPath $propagatedBuildInputs (dream2nix's default), and dream2nix's
# community overrides already remove their conflicting nvidia/__init__ pycache.
#
# Status: written for dream2nix 69eb01fa / nixpkgs 5395fb3a; NOT evaluated here (no nixpkgs
# offline). See docs/STATUS.md.
{ config, lib, ... }:
let
  cudaIgnore = [ "libcuda.so.1" "libcuda.so" "libnvidia-ml.so.1" ];
  driverRunpath = {
    mkDerivation.nativeBuildInputs = [ config.deps.autoAddDriverRunpath ];
    env.autoPatchelfIgnoreMissingDeps = cudaIgnore;
  };
  openmp = { mkDerivation.buildInputs = [ config.deps.stdenv.cc.cc.lib ]; };
in
{
  deps = { nixpkgs, ... }: {
    inherit (nixpkgs) autoAddDriverRunpath stdenv;
  };

  overrides = {
    torch = driverRunpath;
    torchvision = driverRunpath;
    triton = driverRunpath;
    tensorflow = driverRunpath;
    tensorflow-cpu = driverRunpath;
    jaxlib = driverRunpath;
    dgl = driverRunpath;
    # links against TensorFlow's framework library, which lives in the tensorflow wheel
    tensorflow-io-gcs-filesystem.env.autoPatchelfIgnoreMissingDeps = [ "libtensorflow_framework.so.2" ];
    tensorflow-addons.env.autoPatchelfIgnoreMissingDeps = [ "libtensorflow_framework.so.2" ];
    # libgomp
    lightgbm = openmp;
    xgboost = lib.recursiveUpdate openmp driverRunpath;
    scikit-learn = openmp;
    # the deprecated "sklearn" dummy refuses to build unless told it is expected
    sklearn.env.SKLEARN_ALLOW_DEPRECATED_SKLEARN_PACKAGE_INSTALL = "True";
  }
  // lib.genAttrs [
    "nvidia-cublas-cu11" "nvidia-cuda-cupti-cu11" "nvidia-cuda-nvrtc-cu11" "nvidia-cuda-runtime-cu11"
    "nvidia-cudnn-cu11" "nvidia-cufft-cu11" "nvidia-curand-cu11" "nvidia-cusolver-cu11"
    "nvidia-cusparse-cu11" "nvidia-nccl-cu11" "nvidia-nvtx-cu11"
    "nvidia-cublas-cu12" "nvidia-cuda-cupti-cu12" "nvidia-cuda-nvrtc-cu12" "nvidia-cuda-runtime-cu12"
    "nvidia-cudnn-cu12" "nvidia-cufft-cu12" "nvidia-curand-cu12" "nvidia-cusolver-cu12"
    "nvidia-cusparse-cu12" "nvidia-nccl-cu12" "nvidia-nvtx-cu12" "nvidia-nvjitlink-cu12"
  ] (_: { env.autoPatchelfIgnoreMissingDeps = cudaIgnore; });
}
