"""A small WordprocessingML writer for scenario s4, standard library only.

s4 needs files whose every part is known: which story holds a defined
term, which field shows which clause number, which table row is a tracked
insertion. Word-made files are imitated where a check looks (rsid
attributes, docProps/app.xml naming Microsoft Office Word, a settings part
listing the rsids); a file "written by a script" has neither.

A document is a list of blocks:

    {"p": segs, "style": "Heading1", "num": (numId, ilvl), "mark": ("ins"|"del", author)}
    {"table": [{"cells": [segs, ...], "mark": ("ins"|"del", author) or None}, ...]}

and segs a list of:

    "plain text"
    ("ins", author, text)  ("del", author, text)
    ("fn", id)                          footnote reference
    ("bm", name, segs)                  bookmark around segs
    ("ref", bookmark, segs)             REF bookmark \\r \\h, showing segs
    ("cmt", [ids], segs)                comment range(s) around segs
    ("tab",)
    ("field", instruction, segs)        any other field
    ("fbegin", instruction) ... ("fend",)  a field spanning paragraphs (a TOC)

Dates of tracked changes come from `date` (one per turn) so output is
byte-for-byte reproducible; the zip entries carry a fixed time.
"""
import io
import zipfile
from xml.sax.saxutils import escape

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
W14 = "http://schemas.microsoft.com/office/word/2010/wordml"
W15 = "http://schemas.microsoft.com/office/word/2012/wordml"
NS = ('xmlns:w="%s" xmlns:r="%s" xmlns:w14="%s" xmlns:w15="%s" '
      'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" mc:Ignorable="w14 w15"'
      % (W, R, W14, W15))
PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
DOC_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
FIXED_ZIP_TIME = (2025, 1, 1, 0, 0, 0)
XML_DECL = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'


def t(text):
    return '<w:t xml:space="preserve">%s</w:t>' % escape(text)


class Writer:
    """Serialises one document; `rsids` imitates Word, `app` names the producer."""

    def __init__(self, date, rsids, app):
        self.date = date
        self.rsids = rsids
        self.app = app
        self.next_id = 1
        self.bookmark_id = 0

    def rev_attrs(self, author):
        self.next_id += 1
        return 'w:id="%d" w:author="%s" w:date="%s"' % (self.next_id, escape(author, {'"': "&quot;"}), self.date)

    def run(self, inner, deleted=False):
        rsid = ' w:rsidR="00C4A5E2"' if self.rsids and not deleted else (' w:rsidDel="00D71B09"' if self.rsids else "")
        return "<w:r%s>%s</w:r>" % (rsid, inner)

    def segs(self, segs, deleted_by=None):
        out = []
        for s in segs:
            if isinstance(s, str):
                if deleted_by:
                    out.append('<w:del %s>%s</w:del>' % (self.rev_attrs(deleted_by), self.run('<w:delText xml:space="preserve">%s</w:delText>' % escape(s), True)))
                else:
                    out.append(self.run(t(s)))
                continue
            kind = s[0]
            if kind == "ins":
                out.append('<w:ins %s>%s</w:ins>' % (self.rev_attrs(s[1]), self.run(t(s[2]))))
            elif kind == "del":
                out.append('<w:del %s>%s</w:del>' % (self.rev_attrs(s[1]), self.run('<w:delText xml:space="preserve">%s</w:delText>' % escape(s[2]), True)))
            elif kind == "tab":
                out.append(self.run("<w:tab/>"))
            elif kind == "fbegin":      # a field whose result spans paragraphs (a TOC)
                out.append(self.run('<w:fldChar w:fldCharType="begin"/>'))
                out.append(self.run('<w:instrText xml:space="preserve"> %s </w:instrText>' % escape(s[1])))
                out.append(self.run('<w:fldChar w:fldCharType="separate"/>'))
            elif kind == "fend":
                out.append(self.run('<w:fldChar w:fldCharType="end"/>'))
            elif kind == "fnmark":
                out.append(self.run('<w:rPr><w:rStyle w:val="FootnoteReference"/></w:rPr><w:footnoteRef/>'))
            elif kind == "fn":
                out.append(self.run('<w:rPr><w:rStyle w:val="FootnoteReference"/></w:rPr><w:footnoteReference w:id="%d"/>' % s[1]))
            elif kind == "bm":
                self.bookmark_id += 1
                b = self.bookmark_id
                out.append('<w:bookmarkStart w:id="%d" w:name="%s"/>' % (b, s[1]))
                out.append(self.segs(s[2], deleted_by))
                out.append('<w:bookmarkEnd w:id="%d"/>' % b)
            elif kind in ("ref", "field"):
                instr = (" REF %s \\r \\h " % s[1]) if kind == "ref" else (" %s " % s[1])
                out.append(self.run('<w:fldChar w:fldCharType="begin"/>'))
                out.append(self.run('<w:instrText xml:space="preserve">%s</w:instrText>' % escape(instr)))
                out.append(self.run('<w:fldChar w:fldCharType="separate"/>'))
                out.append(self.segs(s[2], deleted_by))
                out.append(self.run('<w:fldChar w:fldCharType="end"/>'))
            elif kind == "cmt":
                ids = s[1]
                out.extend('<w:commentRangeStart w:id="%d"/>' % i for i in ids)
                out.append(self.segs(s[2], deleted_by))
                out.extend('<w:commentRangeEnd w:id="%d"/>' % i for i in ids)
                out.extend(self.run('<w:rPr><w:rStyle w:val="CommentReference"/></w:rPr><w:commentReference w:id="%d"/>' % i) for i in ids)
            else:
                raise ValueError("unknown segment %r" % (s,))
        return "".join(out)

    def paragraph(self, block, in_cell_deleted_by=None):
        ppr = []
        if block.get("style"):
            ppr.append('<w:pStyle w:val="%s"/>' % block["style"])
        if block.get("num"):
            ppr.append('<w:numPr><w:ilvl w:val="%d"/><w:numId w:val="%d"/></w:numPr>' % (block["num"][1], block["num"][0]))
        if block.get("center"):
            ppr.append('<w:jc w:val="center"/>')
        mark = block.get("mark")
        deleted_by = in_cell_deleted_by
        if mark:
            ppr.append('<w:rPr><w:%s %s/></w:rPr>' % (mark[0], self.rev_attrs(mark[1])))
            if mark[0] == "del":
                deleted_by = mark[1]
        # An inserted paragraph's text is given as ("ins", ...) segments.
        body = self.segs(block["p"], deleted_by)
        attrs = ' w:rsidR="00A1B2C3" w:rsidRDefault="00A1B2C3" w14:paraId="%08X" w14:textId="77777777"' % (0x10000000 + self.next_id) if self.rsids else ""
        return "<w:p%s><w:pPr>%s</w:pPr>%s</w:p>" % (attrs, "".join(ppr), body)

    def table(self, block):
        grid = len(block["table"][0]["cells"])
        out = ['<w:tbl><w:tblPr><w:tblStyle w:val="TableGrid"/><w:tblW w:w="0" w:type="auto"/>'
               '<w:tblBorders><w:top w:val="single" w:sz="4"/><w:left w:val="single" w:sz="4"/>'
               '<w:bottom w:val="single" w:sz="4"/><w:right w:val="single" w:sz="4"/>'
               '<w:insideH w:val="single" w:sz="4"/><w:insideV w:val="single" w:sz="4"/></w:tblBorders>'
               '</w:tblPr><w:tblGrid>%s</w:tblGrid>' % ('<w:gridCol w:w="3000"/>' * grid)]
        for row in block["table"]:
            mark = row.get("mark")
            trpr = '<w:trPr><w:%s %s/></w:trPr>' % (mark[0], self.rev_attrs(mark[1])) if mark else ""
            out.append("<w:tr>%s" % trpr)
            for cell in row["cells"]:
                deleted_by = mark[1] if mark and mark[0] == "del" else None
                segs = cell
                if mark and mark[0] == "ins":
                    segs = [("ins", mark[1], c) if isinstance(c, str) else c for c in cell]
                out.append('<w:tc><w:tcPr><w:tcW w:w="3000" w:type="dxa"/></w:tcPr>%s</w:tc>'
                           % self.paragraph({"p": segs}, deleted_by))
            out.append("</w:tr>")
        out.append("</w:tbl>")
        return "".join(out)

    def body(self, blocks):
        out = []
        for b in blocks:
            out.append(self.table(b) if "table" in b else self.paragraph(b))
        return "".join(out)


STYLES = XML_DECL + """<w:styles %s><w:docDefaults><w:rPrDefault><w:rPr><w:rFonts w:ascii="Calibri" w:hAnsi="Calibri"/><w:sz w:val="22"/></w:rPr></w:rPrDefault><w:pPrDefault><w:pPr><w:spacing w:after="120"/></w:pPr></w:pPrDefault></w:docDefaults>
<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/><w:qFormat/></w:style>
<w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/><w:basedOn w:val="Normal"/><w:pPr><w:jc w:val="center"/></w:pPr><w:rPr><w:b/><w:sz w:val="32"/></w:rPr></w:style>
<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/><w:next w:val="Normal"/><w:pPr><w:keepNext/><w:spacing w:before="240"/><w:outlineLvl w:val="0"/></w:pPr><w:rPr><w:b/></w:rPr></w:style>
<w:style w:type="paragraph" w:styleId="TOCHeading"><w:name w:val="TOC Heading"/><w:basedOn w:val="Normal"/><w:rPr><w:b/></w:rPr></w:style>
<w:style w:type="paragraph" w:styleId="TOC1"><w:name w:val="toc 1"/><w:basedOn w:val="Normal"/><w:pPr><w:tabs><w:tab w:val="left" w:pos="440"/><w:tab w:val="right" w:leader="dot" w:pos="9000"/></w:tabs><w:spacing w:after="60"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="Header"><w:name w:val="header"/><w:basedOn w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="Footer"><w:name w:val="footer"/><w:basedOn w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="FootnoteText"><w:name w:val="footnote text"/><w:basedOn w:val="Normal"/><w:rPr><w:sz w:val="18"/></w:rPr></w:style>
<w:style w:type="character" w:styleId="FootnoteReference"><w:name w:val="footnote reference"/><w:rPr><w:vertAlign w:val="superscript"/></w:rPr></w:style>
<w:style w:type="character" w:styleId="CommentReference"><w:name w:val="annotation reference"/><w:rPr><w:sz w:val="16"/></w:rPr></w:style>
<w:style w:type="paragraph" w:styleId="CommentText"><w:name w:val="annotation text"/><w:basedOn w:val="Normal"/></w:style>
<w:style w:type="table" w:styleId="TableGrid"><w:name w:val="Table Grid"/></w:style>
</w:styles>""" % NS


def numbering(restart_num=None):
    """"1." / "1.1" clause numbering (numId 1); `restart_num` adds a list
    instance that restarts level 2 at 1, as a clause pasted from another
    document does."""
    lvl = ('<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/><w:lvlJc w:val="left"/><w:pPr><w:ind w:left="567" w:hanging="567"/></w:pPr></w:lvl>'
           '<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1.%2"/><w:lvlJc w:val="left"/><w:pPr><w:ind w:left="1134" w:hanging="567"/></w:pPr></w:lvl>')
    nums = '<w:num w:numId="1"><w:abstractNumId w:val="1"/></w:num>'
    if restart_num:
        nums += ('<w:num w:numId="%d"><w:abstractNumId w:val="1"/><w:lvlOverride w:ilvl="1"><w:startOverride w:val="1"/></w:lvlOverride></w:num>' % restart_num)
    return XML_DECL + '<w:numbering %s><w:abstractNum w:abstractNumId="1"><w:multiLevelType w:val="multilevel"/>%s</w:abstractNum>%s</w:numbering>' % (NS, lvl, nums)


def build_docx(path, blocks, date, header, footer, footnotes, comments=(), rsids=True,
               app="Microsoft Office Word", restart_num=None):
    """Writes a .docx. `comments`: dicts id, author, text, para_id, parent
    (para_id or None), done (bool)."""
    w = Writer(date, rsids, app)
    sect = ('<w:sectPr><w:headerReference w:type="default" r:id="rIdHeader1"/>'
            '<w:footerReference w:type="default" r:id="rIdFooter1"/>'
            '<w:pgSz w:w="11906" w:h="16838"/><w:pgMar w:top="1440" w:right="1440" w:bottom="1440" w:left="1440" w:header="708" w:footer="708" w:gutter="0"/></w:sectPr>')
    document = XML_DECL + '<w:document %s><w:body>%s%s</w:body></w:document>' % (NS, w.body(blocks), sect)
    hdr = XML_DECL + '<w:hdr %s>%s</w:hdr>' % (NS, w.paragraph({"p": header, "style": "Header"}))
    ftr = XML_DECL + '<w:ftr %s>%s</w:ftr>' % (NS, w.paragraph({"p": footer, "style": "Footer"}))
    notes = ['<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>',
             '<w:footnote w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/></w:r></w:p></w:footnote>']
    for fid, segs in sorted(footnotes.items()):
        notes.append('<w:footnote w:id="%d">%s</w:footnote>'
                     % (fid, w.paragraph({"p": [("fnmark",), " "] + segs, "style": "FootnoteText"})))
    footnotes_xml = XML_DECL + '<w:footnotes %s>%s</w:footnotes>' % (NS, "".join(notes))
    parts = {
        "word/document.xml": document,
        "word/styles.xml": STYLES,
        "word/numbering.xml": numbering(restart_num),
        "word/header1.xml": hdr,
        "word/footer1.xml": ftr,
        "word/footnotes.xml": footnotes_xml,
    }
    rels = [("rIdStyles", "styles", "styles.xml"), ("rIdNumbering", "numbering", "numbering.xml"),
            ("rIdHeader1", "header", "header1.xml"), ("rIdFooter1", "footer", "footer1.xml"),
            ("rIdFootnotes", "footnotes", "footnotes.xml"), ("rIdSettings", "settings", "settings.xml")]
    overrides = [("/word/document.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"),
                 ("/word/styles.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"),
                 ("/word/numbering.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.numbering+xml"),
                 ("/word/header1.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.header+xml"),
                 ("/word/footer1.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.footer+xml"),
                 ("/word/footnotes.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.footnotes+xml"),
                 ("/word/settings.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.settings+xml"),
                 ("/docProps/core.xml", "application/vnd.openxmlformats-package.core-properties+xml")]
    rsid_list = '<w:rsids><w:rsidRoot w:val="00A1B2C3"/><w:rsid w:val="00A1B2C3"/><w:rsid w:val="00C4A5E2"/><w:rsid w:val="00D71B09"/></w:rsids>' if rsids else ""
    parts["word/settings.xml"] = XML_DECL + '<w:settings %s><w:trackRevisions/><w:defaultTabStop w:val="720"/>%s</w:settings>' % (NS, rsid_list)
    if comments:
        cx, ex = [], []
        for c in comments:
            cx.append('<w:comment w:id="%d" w:author="%s" w:date="%s" w:initials="%s"><w:p w14:paraId="%s" w14:textId="77777777"><w:pPr><w:pStyle w:val="CommentText"/></w:pPr>%s%s</w:p></w:comment>' % (
                c["id"], escape(c["author"]), date, "".join(x[0] for x in c["author"].split()), c["para_id"],
                w.run('<w:rPr><w:rStyle w:val="CommentReference"/></w:rPr><w:annotationRef/>'), w.run(t(c["text"]))))
            parent = ' w15:paraIdParent="%s"' % c["parent"] if c.get("parent") else ""
            ex.append('<w15:commentEx w15:paraId="%s"%s w15:done="%d"/>' % (c["para_id"], parent, 1 if c.get("done") else 0))
        parts["word/comments.xml"] = XML_DECL + '<w:comments %s>%s</w:comments>' % (NS, "".join(cx))
        parts["word/commentsExtended.xml"] = XML_DECL + '<w15:commentsEx %s>%s</w15:commentsEx>' % (NS, "".join(ex))
        rels += [("rIdComments", "comments", "comments.xml"),
                 ("rIdCommentsEx", "http://schemas.microsoft.com/office/2011/relationships/commentsExtended", "commentsExtended.xml")]
        overrides += [("/word/comments.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.comments+xml"),
                      ("/word/commentsExtended.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.commentsExtended+xml")]
    parts["word/_rels/document.xml.rels"] = XML_DECL + '<Relationships xmlns="%s">%s</Relationships>' % (
        PKG_REL, "".join('<Relationship Id="%s" Type="%s" Target="%s"/>' % (i, k if k.startswith("http") else "%s/%s" % (DOC_REL, k), tg) for i, k, tg in rels))
    root_rels = [("rId1", "%s/officeDocument" % DOC_REL, "word/document.xml"),
                 ("rId2", "http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties", "docProps/core.xml")]
    if app:
        root_rels.append(("rId3", "%s/extended-properties" % DOC_REL, "docProps/app.xml"))
        overrides.append(("/docProps/app.xml", "application/vnd.openxmlformats-officedocument.extended-properties+xml"))
        parts["docProps/app.xml"] = XML_DECL + ('<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties">'
                                                '<Template>Normal.dotm</Template><Application>%s</Application><AppVersion>16.0000</AppVersion></Properties>' % escape(app))
    parts["docProps/core.xml"] = XML_DECL + (
        '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><dc:title>Distribution Agreement (synthetic example)</dc:title>'
        '<dcterms:created xsi:type="dcterms:W3CDTF">%s</dcterms:created><dcterms:modified xsi:type="dcterms:W3CDTF">%s</dcterms:modified>'
        '</cp:coreProperties>' % (date, date))
    parts["_rels/.rels"] = XML_DECL + '<Relationships xmlns="%s">%s</Relationships>' % (
        PKG_REL, "".join('<Relationship Id="%s" Type="%s" Target="%s"/>' % r for r in root_rels))
    parts["[Content_Types].xml"] = XML_DECL + (
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>%s</Types>'
        % "".join('<Override PartName="%s" ContentType="%s"/>' % o for o in overrides))
    write_zip(path, parts)


def write_zip(path, parts):
    order = ["[Content_Types].xml", "_rels/.rels"] + sorted(k for k in parts if k not in ("[Content_Types].xml", "_rels/.rels"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name in order:
            zi = zipfile.ZipInfo(name, FIXED_ZIP_TIME)
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            z.writestr(zi, parts[name].encode("utf-8"))
    with open(path, "wb") as f:
        f.write(buf.getvalue())
