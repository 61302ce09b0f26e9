use std::ops::Bound;

use fleet_statemachine::{Command, Proposal};
use openraft::{CommittedLeaderId, EntryPayload};

use super::*;

fn entry(term: u64, index: u64) -> Entry {
    let proposal = Proposal::new(vec![Command { now: format!("{term}-{index}"), ops: vec![] }]).expect("encodable");
    Entry { log_id: LogId::new(CommittedLeaderId::new(term, 1), index), payload: EntryPayload::Normal(proposal) }
}

fn run(term: u64, from: u64, to: u64) -> Vec<Entry> {
    (from..=to).map(|i| entry(term, i)).collect()
}

fn all(wal: &Wal) -> Vec<(u64, u64)> {
    read_entries(wal.locate((Bound::Unbounded, Bound::Unbounded)))
        .expect("readable")
        .iter()
        .map(|e| (e.get_log_id().leader_id.term, e.get_log_id().index))
        .collect()
}

fn append(wal: &mut Wal, entries: &[Entry]) {
    let file = wal.append(entries, None).expect("appended");
    sync(&file).expect("synced");
}

#[test]
fn entries_vote_and_marks_survive_a_reopen() {
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let mut wal = Wal::open(dir.path()).expect("new log");
        assert_eq!(wal.log_state(), (None, None));
        sync(&wal.save_vote(Vote::new(3, 2)).expect("vote")).expect("synced");
        append(&mut wal, &run(3, 0, 9));
        let committed = Some(LogId::new(CommittedLeaderId::new(3, 1), 7));
        sync(&wal.append(&run(3, 10, 10), Some(committed)).expect("appended")).expect("synced");
    }
    let wal = Wal::open(dir.path()).expect("reopened");
    assert_eq!(wal.vote(), Some(Vote::new(3, 2)));
    assert_eq!(wal.committed().map(|c| c.index), Some(7));
    assert_eq!(wal.last_index(), Some(10));
    assert_eq!(all(&wal), (0..=10).map(|i| (3, i)).collect::<Vec<_>>());
    let some = read_entries(wal.locate((Bound::Included(4), Bound::Excluded(6)))).expect("readable");
    assert_eq!(some.iter().map(|e| e.get_log_id().index).collect::<Vec<_>>(), vec![4, 5]);
}

#[test]
fn a_truncation_and_an_overwrite_replace_the_tail_after_a_reopen_too() {
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let mut wal = Wal::open(dir.path()).expect("new log");
        append(&mut wal, &run(1, 1, 10));
        sync(&wal.truncate(6, None).expect("truncated")).expect("synced");
        append(&mut wal, &run(2, 6, 8));
        // An append over the tail without a truncation replaces it too.
        append(&mut wal, &run(3, 8, 9));
        let expected: Vec<_> = run(1, 1, 5)
            .iter()
            .chain(&run(2, 6, 7))
            .chain(&run(3, 8, 9))
            .map(|e| (e.log_id.leader_id.term, e.log_id.index))
            .collect();
        assert_eq!(all(&wal), expected);
    }
    let wal = Wal::open(dir.path()).expect("reopened");
    assert_eq!(all(&wal), vec![(1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (2, 6), (2, 7), (3, 8), (3, 9)]);
}

#[test]
fn a_torn_last_record_is_cut_off_and_damage_elsewhere_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let mut wal = Wal::open(dir.path()).expect("new log");
        append(&mut wal, &run(1, 1, 5));
    }
    let path = segment_path(dir.path(), 1);
    let whole = std::fs::read(&path).expect("segment");
    // Half of the last record reached the disk.
    std::fs::write(&path, &whole[..whole.len() - 7]).expect("torn");
    {
        let mut wal = Wal::open(dir.path()).expect("a torn tail is cut off");
        assert_eq!(wal.last_index(), Some(4));
        append(&mut wal, &run(1, 5, 6));
    }
    let wal = Wal::open(dir.path()).expect("reopened");
    assert_eq!(wal.last_index(), Some(6));
    drop(wal);
    // A damaged record in a segment that is not the last one is corruption.
    let mut damaged = std::fs::read(&path).expect("segment");
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0xff;
    std::fs::write(&path, &damaged).expect("damaged");
    std::fs::write(segment_path(dir.path(), 2), []).expect("a later segment");
    let err = Wal::open(dir.path()).err().expect("refused");
    assert!(err.to_string().contains("corrupt record"), "{err}");
}

#[test]
fn full_segments_roll_over_and_purged_ones_are_deleted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut wal = Wal::open_sized(dir.path(), 4096).expect("new log");
    sync(&wal.save_vote(Vote::new(1, 1)).expect("vote")).expect("synced");
    for i in 1..=200 {
        append(&mut wal, &run(1, i, i));
    }
    let segments = wal.segments.len();
    assert!(segments > 3, "{segments} segments");
    wal.purge(LogId::new(CommittedLeaderId::new(1, 1), 150), None).expect("purged");
    assert!(wal.segments.len() < segments, "a purge deletes the segments behind it");
    assert_eq!(wal.log_state().0.map(|p| p.index), Some(150));
    assert_eq!(all(&wal).first(), Some(&(1, 151)));
    drop(wal);
    let wal = Wal::open_sized(dir.path(), 4096).expect("reopened");
    assert_eq!(wal.vote(), Some(Vote::new(1, 1)), "kept by the checkpoints");
    assert_eq!(wal.log_state().0.map(|p| p.index), Some(150));
    assert_eq!(all(&wal), (151..=200).map(|i| (1, i)).collect::<Vec<_>>());
    // Everything purged: the log's last id is the purged one.
    let mut wal = wal;
    wal.purge(LogId::new(CommittedLeaderId::new(1, 1), 200), None).expect("purged");
    assert_eq!(wal.log_state().1.map(|l| l.index), Some(200));
}

#[test]
fn a_log_of_a_newer_format_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut buf = Vec::new();
    let newer = RecordRef::Checkpoint { format: WAL_FORMAT_VERSION + 1, vote: None, committed: None, purged: None };
    frame(&mut buf, &newer).expect("framed");
    std::fs::write(segment_path(dir.path(), 1), &buf).expect("written");
    let err = Wal::open(dir.path()).err().expect("refused");
    assert!(matches!(err, Error::NewerFormat { found, .. } if found == WAL_FORMAT_VERSION + 1), "{err}");
}

#[test]
fn in_the_last_segment_zeros_are_a_torn_write_and_a_changed_record_is_corruption() {
    let big = |index: u64| {
        let proposal = Proposal::new(vec![Command { now: "x".repeat(4000), ops: vec![] }]).expect("encodable");
        Entry { log_id: LogId::new(CommittedLeaderId::new(1, 1), index), payload: EntryPayload::Normal(proposal) }
    };
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let mut wal = Wal::open(dir.path()).expect("new log");
        append(&mut wal, &[big(1), big(2)]);
    }
    let path = segment_path(dir.path(), 1);
    let whole = std::fs::read(&path).expect("segment");
    // The file grew, but the last pages of the last record never landed.
    let mut zeroed = whole.clone();
    let end = zeroed.len();
    zeroed[end - 1500..].fill(0);
    std::fs::write(&path, &zeroed).expect("zeroed");
    let wal = Wal::open(dir.path()).expect("a torn write is cut off");
    assert_eq!(wal.last_index(), Some(1));
    drop(wal);
    // A whole record whose bytes changed is not a torn write.
    let mut changed = whole;
    let end = changed.len();
    changed[end - 100] ^= 0x01;
    std::fs::write(&path, &changed).expect("changed");
    let err = Wal::open(dir.path()).err().expect("refused");
    assert!(err.to_string().contains("checksum does not match"), "{err}");
}
