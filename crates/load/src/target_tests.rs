use super::*;

#[test]
fn urls() {
    let u = parse_url("http://127.0.0.1:8080/a/b?c=d#frag").unwrap();
    assert_eq!(
        (u.host.as_str(), u.port, u.path.as_str()),
        ("127.0.0.1", 8080, "/a/b?c=d")
    );
    let u = parse_url("http://localhost").unwrap();
    assert_eq!((u.port, u.path.as_str()), (80, "/"));
    let u = parse_url("http://[::1]:9000/x").unwrap();
    assert_eq!((u.host.as_str(), u.port), ("::1", 9000));
    assert_eq!(host_field(&u), "[::1]:9000");
    let u = parse_url("http://h?q=1").unwrap();
    assert_eq!(u.path, "/?q=1");
    let u = parse_url("https://example.com/x").unwrap();
    assert_eq!((u.port, u.tls), (443, true));
    assert_eq!(host_field(&u), "example.com");
    for bad in [
        "ftp://x",
        "127.0.0.1:80/",
        "http://",
        "http://h:0/",
        "http://h:99999/",
        "http://h/a b",
        "http://[::1/",
    ] {
        assert!(parse_url(bad).is_err(), "{bad}");
    }
}

#[test]
fn target_from_url_resolves_loopback() {
    let t = Target::url("http://127.0.0.1:1/x").unwrap();
    assert_eq!(t.addr, "127.0.0.1:1".parse().unwrap());
    assert_eq!(t.host, "127.0.0.1:1");
    assert_eq!(t.paths, vec![("/x".to_string(), 0)]);
}

#[test]
fn groups_parse_and_share_one_server() {
    let light: Group = "light=30:/svc/light".parse().unwrap();
    assert_eq!(
        light,
        Group {
            name: "light".into(),
            connections: 30,
            url: "/svc/light".into()
        }
    );
    let heavy: Group = "heavy=2:http://127.0.0.1:9/svc/heavy?x=1".parse().unwrap();
    for bad in [
        "light",
        "light=0:/a",
        "light=x:/a",
        "=3:/a",
        "a b=1:/a",
        "l=1:svc",
    ] {
        assert!(bad.parse::<Group>().is_err(), "{bad}");
    }
    let t = Target::groups(Some("http://127.0.0.1:9/"), &[light.clone(), heavy.clone()]).unwrap();
    assert_eq!(t.classes, ["light", "heavy"]);
    assert_eq!(
        t.paths,
        vec![
            ("/svc/light".to_string(), 0),
            ("/svc/heavy?x=1".to_string(), 1)
        ]
    );
    assert_eq!(t.groups, vec![30, 2]);
    // Another server, a repeated name, or a bare path without a base are refused.
    assert!(Target::groups(Some("http://127.0.0.1:10/"), std::slice::from_ref(&heavy)).is_err());
    assert!(Target::groups(Some("http://127.0.0.1:9/"), &[light.clone(), light.clone()]).is_err());
    assert!(Target::groups(None, &[light]).is_err());
    assert_eq!(Target::groups(None, &[heavy]).unwrap().host, "127.0.0.1:9");
}

#[test]
fn target_from_fileset_prefixes_paths_and_keeps_classes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("set");
    let m = webscope_workload::Spec::WebStoneA { scale: 0.25 }
        .plan(1)
        .unwrap();
    webscope_workload::write(
        &m,
        &dir,
        &Default::default(),
        &Default::default(),
        &mut |_, _| {},
    )
    .unwrap();
    let t = Target::fileset(&dir, "http://127.0.0.1:8080/sets/a/").unwrap();
    assert_eq!(t.classes, ["html", "image", "sound", "video"]);
    assert_eq!(t.paths.len(), 77);
    assert!(
        t.paths[0].0.starts_with("/sets/a/html/"),
        "{}",
        t.paths[0].0
    );
    assert_eq!(t.paths[76].1, 3);
    assert!(Target::fileset(tmp.path(), "http://127.0.0.1/").is_err());
}
