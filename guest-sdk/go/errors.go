package guest

import (
	"errors"
	"fmt"

	"wasmop.dev/guest/internal/wit"
)

// Status is what the apiserver, or the host speaking for it, said about a failed call.
type Status struct {
	// Code is the HTTP status code, 0 when there was no HTTP response.
	Code int
	// Reason is the machine-readable reason, e.g. NotFound.
	Reason string
	// Message says what happened, for people.
	Message string
}

// Error is the status's message with its code.
func (s Status) Error() string { return fmt.Sprintf("%s (%d %s)", s.Message, s.Code, s.Reason) }

// Sentinels for errors.Is, one per error type.
var (
	// ErrNotFound matches *NotFound.
	ErrNotFound = errors.New("not found")
	// ErrConflict matches *Conflict.
	ErrConflict = errors.New("conflict")
	// ErrAlreadyExists matches *AlreadyExists.
	ErrAlreadyExists = errors.New("already exists")
	// ErrForbidden matches *Forbidden.
	ErrForbidden = errors.New("forbidden")
	// ErrInvalid matches *Invalid.
	ErrInvalid = errors.New("invalid")
	// ErrTimeout matches *Timeout.
	ErrTimeout = errors.New("timeout")
	// ErrUnavailable matches *Unavailable.
	ErrUnavailable = errors.New("unavailable")
)

// NotFound: the object does not exist (404).
type NotFound struct{ Status }

// Conflict: the write was based on a stale resourceVersion (409); re-read and retry.
type Conflict struct{ Status }

// AlreadyExists: an object with that name already exists (409).
type AlreadyExists struct{ Status }

// Forbidden: the call was not allowed (403), by the apiserver or by the declared permissions.
type Forbidden struct {
	Status
	// DeniedBy says who refused.
	DeniedBy DeniedBy
}

// Invalid: the object or request was invalid (400, 422).
type Invalid struct{ Status }

// Timeout: the call did not finish in time (504, or the reconcile's deadline).
type Timeout struct{ Status }

// Unavailable: the apiserver or the cache is not available right now (429, 503).
type Unavailable struct{ Status }

// Other is any other failure, with its HTTP code.
type Other struct{ Status }

// Is matches ErrNotFound.
func (*NotFound) Is(target error) bool { return target == ErrNotFound }

// Is matches ErrConflict.
func (*Conflict) Is(target error) bool { return target == ErrConflict }

// Is matches ErrAlreadyExists.
func (*AlreadyExists) Is(target error) bool { return target == ErrAlreadyExists }

// Is matches ErrForbidden.
func (*Forbidden) Is(target error) bool { return target == ErrForbidden }

// Is matches ErrInvalid.
func (*Invalid) Is(target error) bool { return target == ErrInvalid }

// Is matches ErrTimeout.
func (*Timeout) Is(target error) bool { return target == ErrTimeout }

// Is matches ErrUnavailable.
func (*Unavailable) Is(target error) bool { return target == ErrUnavailable }

// DeniedBy says who refused a forbidden call.
type DeniedBy int

const (
	// DeniedByAPIServer is the apiserver's authorization (RBAC).
	DeniedByAPIServer DeniedBy = iota
	// DeniedByDeclaredPermissions is the host: the registration does not declare the permission.
	DeniedByDeclaredPermissions
)

// IgnoreNotFound is nil for a NotFound error and err otherwise.
func IgnoreNotFound(err error) error {
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// FromWIT is the Go error for a host error; for the SDK's own packages.
func FromWIT(e wit.Error) error {
	status := func(s wit.Status) Status { return Status{int(s.Code), s.Reason, s.Message} }
	switch e.Case {
	case wit.ErrorNotFound:
		return &NotFound{status(e.NotFound)}
	case wit.ErrorConflict:
		return &Conflict{status(e.Conflict)}
	case wit.ErrorAlreadyExists:
		return &AlreadyExists{status(e.AlreadyExists)}
	case wit.ErrorForbidden:
		return &Forbidden{status(e.Forbidden.F1), DeniedBy(e.Forbidden.F0)}
	case wit.ErrorInvalid:
		return &Invalid{status(e.Invalid)}
	case wit.ErrorTimeout:
		return &Timeout{status(e.Timeout)}
	case wit.ErrorUnavailable:
		return &Unavailable{status(e.Unavailable)}
	}
	return &Other{status(e.Other)}
}

// ToWIT is the host error for a Go error of this package; for fakes of the host.
func ToWIT(err error) wit.Error {
	var (
		nf *NotFound
		c  *Conflict
		ae *AlreadyExists
		f  *Forbidden
		iv *Invalid
		t  *Timeout
		u  *Unavailable
		o  *Other
	)
	st := func(s Status) wit.Status {
		return wit.Status{Code: uint16(s.Code), Reason: s.Reason, Message: s.Message}
	}
	switch {
	case errors.As(err, &nf):
		return wit.Error{Case: wit.ErrorNotFound, NotFound: st(nf.Status)}
	case errors.As(err, &c):
		return wit.Error{Case: wit.ErrorConflict, Conflict: st(c.Status)}
	case errors.As(err, &ae):
		return wit.Error{Case: wit.ErrorAlreadyExists, AlreadyExists: st(ae.Status)}
	case errors.As(err, &f):
		return wit.Error{Case: wit.ErrorForbidden, Forbidden: wit.Tuple2[wit.DeniedBy, wit.Status]{F0: wit.DeniedBy(f.DeniedBy), F1: st(f.Status)}}
	case errors.As(err, &iv):
		return wit.Error{Case: wit.ErrorInvalid, Invalid: st(iv.Status)}
	case errors.As(err, &t):
		return wit.Error{Case: wit.ErrorTimeout, Timeout: st(t.Status)}
	case errors.As(err, &u):
		return wit.Error{Case: wit.ErrorUnavailable, Unavailable: st(u.Status)}
	case errors.As(err, &o):
		return wit.Error{Case: wit.ErrorOther, Other: st(o.Status)}
	}
	return wit.Error{Case: wit.ErrorOther, Other: wit.Status{Message: err.Error()}}
}

// StatusOf is the Status an error of the host carries, and whether err is, or wraps, one.
func StatusOf(err error) (Status, bool) {
	var s interface{ status() Status }
	if errors.As(err, &s) {
		return s.status(), true
	}
	return Status{}, false
}

func (s Status) status() Status { return s }
