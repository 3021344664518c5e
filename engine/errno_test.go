package engine

import "syscall"

const (
	errnoENOSPC = syscall.ENOSPC
	errnoEIO    = syscall.EIO
)
