#!/bin/bash
#SBATCH --job-name=example
#SBATCH --gres=gpu:1
. ~/.bashrc
conda activate example-env
python run.py
