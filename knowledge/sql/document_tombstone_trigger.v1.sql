DROP TRIGGER IF EXISTS knowledge_document_tombstone ON knowledge_document;
CREATE TRIGGER knowledge_document_tombstone AFTER DELETE ON knowledge_document
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION knowledge_document_tombstone();
