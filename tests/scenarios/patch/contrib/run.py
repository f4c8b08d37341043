import sys
import os

# A tiny stand-in for a contribution's training script.
DATA = "data.csv"
OUT = "out.csv"


def load():
    return [1, 2, 3]


EPOCHS = 100


def main():
    print("training for", EPOCHS, "epochs on", load())
    with open(OUT, "w") as f:
        f.write("id,prediction\n1,0.5\n")


main()
