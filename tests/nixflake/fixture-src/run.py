# stand-in "run.py": a shell script run by the fake python
t=0; out=.
while [ $# -gt 0 ]; do
  case "$1" in
    --test) t=1 ;;
    --output-dir) out="$2"; shift ;;
  esac
  shift
done
echo "run in $(pwd) test=$t out=$out home=$HOME data=$PYREPRO_DATA_DIR bench=$PYREPRO_BENCHMARKS_DIR gpu=${PYREPRO_GPU_NEED:-unset}"
touch written-here
echo "id,prediction" > "$out/prediction.csv.zip"
