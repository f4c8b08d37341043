# stand-in "run.py": a shell script run by the fake python
t=0
for a in "$@"; do [ "$a" = "--test" ] && t=1; done
echo "run in $(pwd) test=$t args=$*"
touch written-here
