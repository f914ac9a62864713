"""Imported only in the image workers' forkserver (its preload, curation.hashing): the forkserver
ends when the process that started it does, so a SIGKILLed worker leaves no forkserver behind."""

import os

from .lifeline import die_with

die_with(os.getppid())
