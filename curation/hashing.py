"""Decoding, hashing and writing many images in worker processes.

Most of analysing a small image (decode, MD5, SHA-256, pHash, dHash, thumbnail) is short
Pillow and numpy calls that hold the GIL, so in threads it ran one image at a time beside the
importing job's own thread (reading rows, the database side), which waited for it. A worker
process gets the bytes of a few files, analyses each as curation.imaging does and, on local
disk, writes its content-addressed files (curation.content), and sends back the analyses.

Needs no Django settings: the workers come from a forkserver (never a fork of a process with
threads and database connections) and import this module, Pillow and numpy. The pool is started
on first use and kept for the life of the process (later imports share it); the forkserver and
the workers end with the process that started them, even when it is killed (curation.lifeline). Where processes
cannot start (a Celery prefork child is a daemonic process: there the worker processes are
Celery's own, one job each) or a worker dies, callers analyse in their own threads instead.
"""

from __future__ import annotations

import hashlib
import logging
import multiprocessing
import os
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from .content import Disk, stored_files, write_once
from .imaging import ImageAnalysis, ImageLimits, ImageRejected, analyse_image
from .lifeline import die_with, own_temp_dir, remove_stale_temp_dirs

log = logging.getLogger(__name__)


@dataclass
class Analysed:
    """One file's analysis, or why it is no image; with the content-addressed files written for it."""

    md5: str
    analysis: ImageAnalysis | None = None
    error: ImageRejected | None = None
    written: tuple[str, ...] = ()  # names this call created (the rest existed)


def analyse_and_write(data: bytes, limits: ImageLimits, thumbnail_size: int, disk: Disk | None) -> Analysed:
    try:
        analysis = analyse_image(data, limits=limits, thumbnail_size=thumbnail_size)
    except ImageRejected as exc:
        return Analysed(md5=hashlib.md5(data).hexdigest(), error=exc)
    if disk is None:  # not local disk: the caller stores the files through its storage
        return Analysed(md5=analysis.md5, analysis=analysis)
    written = tuple(name for name, content in stored_files(analysis, data) if write_once(disk, name, content))
    return Analysed(md5=analysis.md5, analysis=analysis, written=written)


def analyse_many(datas: list[bytes], limits: ImageLimits, thumbnail_size: int, disk: Disk | None) -> list[Analysed]:
    """analyse_and_write on each file, in order: what one worker does with one message."""
    return [analyse_and_write(data, limits, thumbnail_size, disk) for data in datas]


_pool: ProcessPoolExecutor | None = None
_pool_size = 0
_unavailable = False  # processes could not start here: do not try again in this process
_lock = threading.Lock()


def submit(workers: int, datas: list[bytes], limits: ImageLimits, thumbnail_size: int, disk: Disk | None) -> Future | None:
    """analyse_many in a worker process; None when there are no worker processes to use."""
    pool = _processes(workers)
    if pool is None:
        return None
    try:
        return pool.submit(analyse_many, datas, limits, thumbnail_size, disk)
    except (BrokenProcessPool, RuntimeError):  # a worker died (or the pool shut down): start afresh next time
        discard(pool)
    except (OSError, AssertionError, TypeError) as exc:  # the pool starts a worker on a submit that finds none idle
        _give_up(exc)
    return None


def discard(pool: ProcessPoolExecutor | None = None) -> None:
    """Forget the pool (a worker of it died), so the next submit starts a new one."""
    global _pool
    with _lock:
        if pool is None or pool is _pool:
            broken, _pool = _pool, None
            if broken is not None:
                broken.shutdown(wait=False, cancel_futures=True)


def _processes(workers: int) -> ProcessPoolExecutor | None:
    global _pool, _pool_size, _unavailable
    if workers < 1 or _unavailable:
        return None
    with _lock:
        if _pool is not None and _pool_size == workers:
            return _pool
        if _pool is not None:
            _pool.shutdown(wait=False, cancel_futures=True)
            _pool = None
        try:
            stale = remove_stale_temp_dirs()  # what SIGKILLed workers before this one left
            if stale:
                log.info("removed %d multiprocessing folder(s) of processes that are gone", len(stale))
            own_temp_dir()
            context = multiprocessing.get_context("forkserver")
            # The forkserver and each worker process end with this process, however it ends (a
            # SIGKILLed Celery worker leaves none of them behind; the resource tracker then ends too).
            context.set_forkserver_preload([__name__, "curation.forkserver_lifeline"])
            _pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=die_with, initargs=(os.getpid(),))
            _pool_size = workers
        except (OSError, ValueError) as exc:
            _unavailable = True
            log.warning("ingest analyses images in threads: worker processes cannot start here (%s)", exc)
            return None
        return _pool


def _give_up(exc: BaseException) -> None:
    """Processes cannot start in this process: a daemonic one may not have children, and in a
    Celery prefork child (billiard's daemonic process) multiprocessing can start none."""
    global _unavailable
    _unavailable = True
    discard()
    log.warning("ingest analyses images in threads: worker processes cannot start here (%s)", exc)
