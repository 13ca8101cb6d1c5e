use super::*;

fn site() -> (tempfile::TempDir, Root) {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..10 {
        std::fs::write(dir.path().join(format!("f{i}")), vec![b'x'; 100]).unwrap();
    }
    std::fs::write(dir.path().join("big"), vec![b'b'; 5000]).unwrap();
    let root = Root::open(dir.path(), false).unwrap();
    (dir, root)
}

fn caches(t: Techniques, bytes: usize, entries: usize) -> Caches {
    Caches::new(t, bytes, entries, 1024)
}

fn hit(cache: &mut Caches, root: &Root, name: &str) -> Rc<Entry> {
    match cache.resolve(root, b"h", &format!("/{name}"), &mut Vec::new()) {
        Resolved::File(entry) => entry,
        Resolved::BadTarget => panic!("{name}: bad target"),
        Resolved::Other(other) => panic!("{name}: {other:?}"),
    }
}

#[test]
fn bounded_in_bytes_and_entries() {
    let (_dir, root) = site();
    let mut cache = caches(Techniques::default(), 350, 100);
    for i in 0..10 {
        hit(&mut cache, &root, &format!("f{i}"));
        assert!(cache.body_bytes <= 350);
    }
    assert_eq!(cache.len(), 3);
    let mut cache = caches(Techniques::default(), 1 << 20, 4);
    for i in 0..10 {
        hit(&mut cache, &root, &format!("f{i}"));
    }
    assert_eq!(cache.len(), 4);
    assert!(cache.by_uri.len() <= 4);
}

#[test]
fn each_technique_decides_what_an_entry_holds() {
    let (_dir, root) = site();
    let mut all = caches(Techniques::default(), 1 << 20, 100);
    let a = hit(&mut all, &root, "f1");
    assert!(
        Rc::ptr_eq(&a, &hit(&mut all, &root, "f1")),
        "a hit is the same entry"
    );
    assert_eq!(a.bytes.as_deref(), Some(&[b'x'; 100][..]));
    let big = hit(&mut all, &root, "big");
    assert!(
        big.bytes.is_none() && big.fd.is_some(),
        "large files keep a descriptor"
    );

    let no_sendfile = Techniques {
        sendfile: false,
        ..Techniques::default()
    };
    let mut mapped = caches(no_sendfile, 1 << 20, 100);
    let big = hit(&mut mapped, &root, "big");
    assert_eq!(
        big.map.as_ref().map(|m| m.len()),
        Some(5000),
        "mmap without sendfile"
    );

    let mut stat_only = Techniques::baseline();
    stat_only.stat_cache = true;
    let mut meta = caches(stat_only, 1 << 20, 100);
    let a = hit(&mut meta, &root, "f1");
    assert!(
        a.bytes.is_none() && a.fd.is_none(),
        "the stat-cache keeps metadata only"
    );
    assert!(Rc::ptr_eq(&a, &hit(&mut meta, &root, "f1")));

    let mut none = caches(Techniques::baseline(), 1 << 20, 100);
    let a = hit(&mut none, &root, "f1");
    let b = hit(&mut none, &root, "f1");
    assert!(!Rc::ptr_eq(&a, &b), "the baseline keeps nothing");
    assert!(
        a.fd.is_some(),
        "an uncached entry carries its open descriptor"
    );
    assert_eq!(none.len(), 0);
}

#[test]
fn changes_and_deletions_are_seen_after_the_revalidation_period() {
    let (dir, root) = site();
    let no_stat_cache = Techniques {
        stat_cache: false,
        ..Techniques::default()
    };
    for techniques in [Techniques::default(), no_stat_cache] {
        let mut cache = caches(techniques, 1 << 20, 100);
        std::fs::write(dir.path().join("f1"), vec![b'x'; 100]).unwrap();
        assert_eq!(hit(&mut cache, &root, "f1").size, 100);
        std::fs::write(dir.path().join("f1"), vec![b'y'; 7]).unwrap();
        std::thread::sleep(REVALIDATE + Duration::from_millis(50));
        let entry = hit(&mut cache, &root, "f1");
        assert_eq!(entry.size, 7);
        assert_eq!(entry.bytes.as_deref(), Some(&b"yyyyyyy"[..]));
        std::fs::remove_file(dir.path().join("f1")).unwrap();
        std::thread::sleep(REVALIDATE + Duration::from_millis(50));
        assert!(matches!(
            cache.resolve(&root, b"h", "/f1", &mut Vec::new()),
            Resolved::Other(Lookup::NotFound)
        ));
    }
}

#[test]
fn without_the_stat_cache_a_change_is_seen_at_once() {
    let (dir, root) = site();
    let t = Techniques {
        stat_cache: false,
        ..Techniques::default()
    };
    let mut cache = caches(t, 1 << 20, 100);
    assert_eq!(hit(&mut cache, &root, "f2").size, 100);
    std::fs::write(dir.path().join("f2"), vec![b'z'; 3]).unwrap();
    assert_eq!(hit(&mut cache, &root, "f2").size, 3);
}

#[test]
fn the_uri_cache_remembers_translations_per_host() {
    let (_dir, root) = site();
    let mut cache = caches(Techniques::default(), 1 << 20, 100);
    let a = hit(&mut cache, &root, "f3");
    let b = match cache.resolve(&root, b"h", "/./f3", &mut Vec::new()) {
        Resolved::File(e) => e,
        _ => panic!(),
    };
    assert!(Rc::ptr_eq(&a, &b));
    assert_eq!(cache.by_uri.len(), 2);
    let _ = cache.resolve(&root, b"other", "/f3", &mut Vec::new());
    assert_eq!(cache.by_uri.len(), 3);
    assert!(matches!(
        cache.resolve(&root, b"h", "/../x", &mut Vec::new()),
        Resolved::BadTarget
    ));
}
