package slurmstate

import (
	"fmt"
	"strings"
	"time"
)

// noReservations is what scontrol prints when there are none.
const noReservations = "No reservations in the system"

// maxReservedNames bounds the names all reservations of one output
// expand to (each hostlist is bounded by MaxHostlistNames as well).
const maxReservedNames = 1_000_000

// ParseReservations reads `scontrol show reservation --oneliner`. "No
// reservations in the system" is an empty list. Times are read in loc
// (time.Local when nil), slurmctld's zone.
func ParseReservations(out []byte, loc *time.Location) ([]Reservation, error) {
	if loc == nil {
		loc = time.Local
	}
	if strings.TrimSpace(string(out)) == noReservations {
		return []Reservation{}, nil
	}
	recs, err := records(out)
	if err != nil {
		return nil, fmt.Errorf("parse scontrol show reservation: %w", err)
	}
	res := make([]Reservation, 0, len(recs))
	budget := maxReservedNames
	for _, r := range recs {
		v, err := parseReservation(r, loc, min(budget, MaxHostlistNames))
		if err != nil {
			return nil, fmt.Errorf("parse scontrol show reservation: line %d: %w", r.line, err)
		}
		budget -= len(v.Nodes)
		res = append(res, v)
	}
	return res, nil
}

func parseReservation(r record, loc *time.Location, maxNames int) (Reservation, error) {
	f := r.fields
	if r.first != "ReservationName" || f["ReservationName"] == "" {
		return Reservation{}, fmt.Errorf("record starts with %s=, want ReservationName=: is this scontrol show reservation output?", clip(r.first))
	}
	v := Reservation{
		Name:      f["ReservationName"],
		NodeList:  f["Nodes"],
		Partition: f["PartitionName"],
		Users:     list(f["Users"]),
		Accounts:  list(f["Accounts"]),
		Flags:     list(f["Flags"]),
		State:     f["State"],
	}
	if v.NodeList == "(null)" {
		v.NodeList = ""
	}
	if v.Partition == "(null)" {
		v.Partition = ""
	}
	var err error
	if v.Start, err = parseTime(f["StartTime"], loc); err != nil {
		return Reservation{}, fmt.Errorf("reservation %s: StartTime: %w", clip(v.Name), err)
	}
	if v.End, err = parseTime(f["EndTime"], loc); err != nil {
		return Reservation{}, fmt.Errorf("reservation %s: EndTime: %w", clip(v.Name), err)
	}
	if maxNames < 1 {
		return Reservation{}, fmt.Errorf("reservation %s: the reservations name more than %d nodes in all", clip(v.Name), maxReservedNames)
	}
	if v.Nodes, err = ExpandHostlist(v.NodeList, maxNames); err != nil {
		return Reservation{}, fmt.Errorf("reservation %s: Nodes: %w", clip(v.Name), err)
	}
	return v, nil
}
