#!/bin/bash
#SBATCH --time=1:00:00
. ~/.bashrc
conda activate myenv
python run.py
