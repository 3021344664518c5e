package engine

import "syscall"

const (
	errnoENOSPC = syscall.ENOSPC
	errnoEIO    = syscall.EIO
	errnoEDQUOT = syscall.EDQUOT
)
